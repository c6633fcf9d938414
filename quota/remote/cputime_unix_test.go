//go:build unix

package remote

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system time so far: the benchmarks
// report it beside the wall time, which other work on a shared machine
// inflates far more.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
