package opstest

import (
	"syscall"
	"time"
)

// waitUntil returns at t, or soon after. The Go runtime's own sleep wakes
// up to a millisecond late while it is idle (it waits in epoll with a
// millisecond timeout), which a latency measured from the schedule would
// count against the server; so the last stretch is a nanosleep of the
// thread, about 0.1 ms late on the machines measured here.
func waitUntil(t time.Time) {
	const coarse = 2 * time.Millisecond
	for {
		w := time.Until(t)
		switch {
		case w <= 0:
			return
		case w > coarse:
			time.Sleep(w - coarse)
		default:
			ts := syscall.NsecToTimespec(int64(w))
			syscall.Nanosleep(&ts, nil) //nolint:errcheck // EINTR: the loop sleeps again
		}
	}
}
