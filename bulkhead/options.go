package bulkhead

import (
	"time"
)

// The options of New.

type config struct {
	queue     int
	maxWait   time.Duration
	lifoAfter int
	clock     Clock
	adaptive  *AdaptiveConfig
}

// Option configures a Bulkhead.
type Option func(*config)

// WithQueue lets up to n requests wait when the limit is reached; the
// default is 0: refuse at once. Size it from the bursts you must absorb
// and the wait your clients can stand, not to avoid refusing: a queue ten
// times what can be served only makes everyone slow (docs/bulkhead.md).
func WithQueue(n int) Option { return func(c *config) { c.queue = n } }

// WithMaxWait refuses, with ErrMaxWait, a request that has waited d in the
// queue, and one that would, going by the queue's current speed. The
// default, 0, is no maximum (the caller's context still applies).
func WithMaxWait(d time.Duration) Option { return func(c *config) { c.maxWait = d } }

// WithLIFO serves each priority newest first while the queue holds at
// least backlog requests — of every priority, the one about to be served
// included — and oldest first below that. The default, 0, is FIFO always.
func WithLIFO(backlog int) Option { return func(c *config) { c.lifoAfter = backlog } }

// WithClock sets the clock the bulkhead reads. The default is the real
// one.
func WithClock(c Clock) Option { return func(cfg *config) { cfg.clock = c } }

// WithAdaptive makes the limit adaptive: it starts at New's limit and
// follows the latency and throughput it observes (adaptive.go,
// docs/bulkhead.md).
func WithAdaptive(a AdaptiveConfig) Option {
	return func(c *config) { c.adaptive = &a }
}
