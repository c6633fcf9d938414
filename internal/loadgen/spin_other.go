//go:build !linux

package loadgen

import (
	"errors"
	"time"
)

// errNotLinux: Spin and the pinning are built on Linux's epoll and
// sched_setaffinity; elsewhere the benchmarks say so.
var errNotLinux = errors.New("loadgen: Spin and pinning need Linux")

// Spin needs Linux.
func Spin(addr string, wire Wire, conns int, rate float64, d time.Duration) (Result, error) {
	return Result{}, errNotLinux
}

// PinSelf needs Linux.
func PinSelf(cpu int) (restore func(), err error) { return nil, errNotLinux }

// PinProcess needs Linux.
func PinProcess(pid, cpu int) error { return errNotLinux }

// Steal reads Linux's /proc/stat; elsewhere it is unknown.
func Steal() []time.Duration { return nil }
