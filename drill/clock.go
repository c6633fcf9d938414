package drill

import "time"

// Clock is the wall clock a drill runs on: the time its minutes are laid
// on, and the timer that ends it. The default is the machine's clock;
// tests pass a virtual one (internal/vclock) or run in a testing/synctest
// bubble.
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
