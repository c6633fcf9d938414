// Package pid says which P — the Go scheduler's processor, one per
// GOMAXPROCS — the calling goroutine runs on, so that per-core state can
// be kept without a lock: the quota region limiter keeps a small token
// cache per P, so that two cores admitting for one tenant do not move one
// cache line between them on every request.
//
// P reads the runtime's own number for the P (runtime.procPin, which
// sync.Pool uses for the same purpose, reached by a linkname the runtime
// keeps for outside packages: go.dev/issue/67401). The answer is a hint:
// the goroutine may move to another P as soon as P returns, so callers
// must be correct whichever slot they use; they only run faster when
// goroutines mostly stay put.
package pid
