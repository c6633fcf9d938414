package bulkhead

import "time"

// Clock is the time a bulkhead reads: for the queue's waits and the
// adaptive limit's latencies. The default is the real clock; a model that
// drives a bulkhead in simulated time passes a virtual one (see
// internal/vclock), and tests may run it in a testing/synctest bubble.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once, d from now, on any goroutine.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop cancels the call and reports whether it was still pending.
	Stop() bool
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// sinceReal is time.Since, for a bulkhead on the machine's clock: the one
// place besides realClock where the bulkhead reads it, so that the
// boundaries check can tell.
func sinceReal(t time.Time) time.Duration { return time.Since(t) }
