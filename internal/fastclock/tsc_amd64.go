package fastclock

import (
	"os"
	"runtime"
	"strings"
)

// rdtsc reads the time-stamp counter (tsc_amd64.s).
func rdtsc() uint64

// haveTSC says whether the TSC may stand in for the monotonic clock: only
// when the kernel itself keeps time with it. Linux picks "tsc" as its
// clocksource only for a counter that runs at a constant rate through
// frequency changes and idle states and that it found in step across all
// CPUs, and it switches away when its watchdog sees it misbehave; in a
// virtual machine it does so only when the hypervisor declares the counter
// stable. CLOCK_MONOTONIC is then the TSC scaled, which is what Now does.
func haveTSC() (bool, string) {
	if runtime.GOOS != "linux" {
		return false, "not Linux"
	}
	b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	if err != nil {
		return false, "clocksource unreadable"
	}
	if cs := strings.TrimSpace(string(b)); cs != "tsc" {
		return false, "the kernel's clocksource is " + cs
	}
	return true, ""
}
