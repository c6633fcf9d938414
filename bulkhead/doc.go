// Package bulkhead protects a service from overload: a concurrency limit
// inside, a bounded queue outside, and an immediate, honest refusal beyond
// both — the cure for the "sudden server death" in which a server that
// took a peak it should have survived keeps slowing down long after it
// (docs/bulkhead.md tells the story and the numbers).
//
//	b, err := bulkhead.New(100,
//		bulkhead.WithQueue(100),              // at most 100 wait outside
//		bulkhead.WithMaxWait(2*time.Second),  // and none longer than 2 s
//	)
//	http.Handle("/", bulkheadhttp.Middleware(b)(handler)) // 503 + Retry-After when full (package bulkheadhttp)
//	prometheus.MustRegister(bulkheadmetrics.NewCollector(b, "api")) // package bulkheadmetrics
//
// Or by hand:
//
//	p, err := b.Acquire(ctx) // waits in the queue; refuses if ctx is done or its deadline cannot be met
//	if err != nil {
//		return err // errors.Is(err, bulkhead.ErrRejected); bulkhead.ReasonOf(err)
//	}
//	defer p.Release()
//
// Requests have priorities (PriorityLow … PriorityCritical): higher tiers
// are admitted first and may take a lower tier's place in a full queue.
// Within a tier the queue is first in, first out, and a newcomer never
// passes a waiter; WithLIFO serves the newest first under a backlog. WithAdaptive lets the
// limit find the service's knee from the latency and throughput it sees.
//
// The uncontended path is one compare-and-swap to acquire and one atomic
// add to release, with no allocation (docs/benchmarks.md). No goroutine or timer
// is created per waiter, and nothing runs while the bulkhead is idle. The
// clock is a parameter (WithClock), so models drive the same bulkhead in
// virtual time with Submit (package overload).
package bulkhead
