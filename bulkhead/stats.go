package bulkhead

import (
	"time"
)

// What a bulkhead counts: its Stats, the speed of its queue (for refusing
// waits that cannot end in time) and the histogram of queue waits.

// Stats is a snapshot of a bulkhead's counts.
type Stats struct {
	Limit     int
	InFlight  int
	Queued    int
	Admitted  uint64 // granted a permit, at once or after waiting
	Completed uint64 // released their permit
	Waited    uint64 // admitted after waiting in the queue
	Rejected  map[Reason]uint64
	// Waits is how long the Waited requests waited, as a histogram (those
	// admitted at once, Admitted − Waited, are not in it: the fast path
	// records nothing).
	Waits WaitHistogram
}

// WaitHistogram counts queue waits by upper bound: Counts[i] waited more
// than Bounds[i−1] and at most Bounds[i] seconds; a longer wait counts in
// Stats.Waited and in Sum alone.
type WaitHistogram struct {
	Bounds []float64 // seconds, ascending; the same for every bulkhead
	Counts []uint64
	Sum    float64 // seconds, all the waits together
}

// Stats returns the bulkhead's counts.
func (b *Bulkhead) Stats() Stats {
	var s, wraps uint64
	for { // a consistent pair: the word and the wraps of its completed field
		wraps = b.wraps.Load()
		s = b.state.Load()
		if b.wraps.Load() == wraps {
			break
		}
	}
	completed := wraps<<32 | s>>completedShift
	st := Stats{
		Limit:     b.Limit(),
		InFlight:  int(s & inflightMask),
		Queued:    int(s & queuedMask >> queuedShift),
		Completed: completed,
		Admitted:  completed + s&inflightMask,
		Rejected:  make(map[Reason]uint64, len(reasons)),
	}
	st.Waits = WaitHistogram{
		Bounds: append([]float64(nil), waitBuckets[:]...), // a copy: a caller may write to it
		Counts: make([]uint64, len(waitBuckets)),
	}
	b.mu.Lock()
	st.Waited = b.waits.count
	st.Waits.Sum = b.waits.sum
	copy(st.Waits.Counts, b.waits.buckets[:])
	b.mu.Unlock()
	for i, r := range reasons {
		st.Rejected[r] = b.rejected[i].Load()
	}
	return st
}

// RetryAfter estimates when a refused client may find room: the time the
// queue needs to empty at its current speed, from 1 s to 60 s; 1 s while
// the speed is unknown.
func (b *Bulkhead) RetryAfter() time.Duration {
	b.mu.Lock()
	wait, ok := b.handoffs.expectedWait(b.q.n + 1)
	b.mu.Unlock()
	if !ok {
		return time.Second
	}
	return min(60*time.Second, max(time.Second, wait))
}

// rate measures how fast the queue moves: permits handed to waiters per
// second, over windows of at least a quarter of a second.
type rate struct {
	start    time.Time
	n        int
	perSec   float64 // 0 until measured
	lastSeen time.Time
}

const rateWindow = 250 * time.Millisecond

func (r *rate) observe(now time.Time) {
	if r.start.IsZero() || now.Sub(r.lastSeen) > 4*rateWindow {
		// The queue was idle: start a fresh window, keep the old speed.
		r.start, r.n = now, 0
	}
	r.n++
	r.lastSeen = now
	if d := now.Sub(r.start); d >= rateWindow {
		v := float64(r.n) / d.Seconds()
		if r.perSec == 0 {
			r.perSec = v
		} else {
			r.perSec = (r.perSec + v) / 2
		}
		r.start, r.n = now, 0
	}
}

// expectedWait estimates the wait of a request with ahead waiters in
// front of it, once the queue's speed is known.
func (r *rate) expectedWait(ahead int) (time.Duration, bool) {
	if r.perSec <= 0 {
		return 0, false
	}
	return time.Duration(float64(ahead) / r.perSec * float64(time.Second)), true
}

// waitStats is the queue-wait histogram of the requests that waited; the
// ones admitted at once are counted apart (Stats.Admitted − Waited), so
// the fast path records nothing.
type waitStats struct {
	count   uint64
	sum     float64 // seconds
	buckets [len(waitBuckets)]uint64
}

// waitBuckets are the histogram's upper bounds, in seconds.
var waitBuckets = [...]float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

func (w *waitStats) observe(d time.Duration) {
	s := d.Seconds()
	w.count++
	w.sum += s
	for i, ub := range waitBuckets {
		if s <= ub {
			w.buckets[i]++
			break
		}
	}
}
