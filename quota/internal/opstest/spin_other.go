//go:build !linux

package opstest

import (
	"errors"
	"time"
)

// errNotLinux: Spin and the pinning are built on Linux's epoll and
// sched_setaffinity; elsewhere the load benchmarks say so.
var errNotLinux = errors.New("opstest: spin and pin need Linux")

// Spin needs Linux.
func Spin(addr string, req []byte, whole func([]byte) (int, error), conns int, rate float64, d time.Duration) (Load, error) {
	return Load{}, errNotLinux
}

// PinSelf needs Linux.
func PinSelf(cpu int) (restore func(), err error) { return nil, errNotLinux }

// PinProcess needs Linux.
func PinProcess(pid, cpu int) error { return errNotLinux }
