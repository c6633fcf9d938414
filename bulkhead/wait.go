package bulkhead

import (
	"context"
	"time"
)

// The slow path: a request that finds no room waits in the queue (queue.go)
// until a release, a raised limit or its expiry decides it; decisions made
// under the lock are delivered after it is released.

// acquireSlow queues; the context was not done a moment ago, and if it
// is done now, the wait below ends at once.
func (b *Bulkhead) acquireSlow(ctx context.Context) (Permit, error) {
	deadline, _ := ctx.Deadline()
	w := b.pool.Get().(*waiter)
	p, err, queued := b.enqueue(PriorityFrom(ctx), deadline, false, w)
	if !queued {
		b.pool.Put(w)
		return p, err
	}
	select {
	case <-w.ready:
		p, err = w.permit, w.err
	case <-ctx.Done():
		b.mu.Lock()
		if !w.granted && w.err == nil {
			b.dequeue(w)
			b.mu.Unlock()
			b.rejected[rCanceled].Add(1)
			b.recycle(w)
			return Permit{}, &rejection{reason: rCanceled, cause: ctx.Err()}
		}
		b.mu.Unlock()
		// Decided as the context ended: keep the answer, as
		// x/sync/semaphore does, rather than undo a grant.
		<-w.ready
		p, err = w.permit, w.err
	}
	b.recycle(w)
	return p, err
}

// Submit asks for a permit without blocking: fn is called exactly once,
// with the permit or the refusal — before Submit returns when the answer is
// known at once, otherwise later from the goroutine that releases a
// permit, raises the limit or expires the wait. A zero deadline is none.
// fn must not block; it may call the bulkhead. Submit is how a model
// drives a bulkhead in virtual time (package overload).
func (b *Bulkhead) Submit(prio Priority, deadline time.Time, fn func(Permit, error)) {
	if prio < 0 || prio >= numPriorities {
		prio = PriorityNormal
	}
	if b.tryFast() {
		fn(b.permit(), nil)
		return
	}
	w := b.pool.Get().(*waiter)
	w.fn = fn
	p, err, queued := b.enqueue(prio, deadline, true, w)
	if !queued {
		w.fn = nil
		b.pool.Put(w)
		fn(p, err)
	}
}

// enqueue is the slow path of an arrival: admit if there is room after
// all, refuse, or queue w. The deadline is checked against the queue's
// speed before w waits; it is the queue's own expiry only for Submit
// (Acquire's context expires by itself).
func (b *Bulkhead) enqueue(prio Priority, deadline time.Time, expireAtDeadline bool, w *waiter) (Permit, error, bool) {
	now := b.cfg.clock.Now()
	if b.adaptive != nil {
		b.adaptive.markBinding()
	}
	b.mu.Lock()
	p, queued, evicted, err := b.enqueueLocked(now, prio, deadline, expireAtDeadline, w)
	b.mu.Unlock()
	b.notify(evicted)
	return p, err, queued
}

func (b *Bulkhead) enqueueLocked(now time.Time, prio Priority, deadline time.Time, expireAtDeadline bool, w *waiter) (p Permit, queued bool, evicted *waiter, err error) {
	for {
		s := b.state.Load()
		limit := uint64(b.limit.Load())
		if s&queuedMask == 0 && s&inflightMask < limit {
			if b.state.CompareAndSwap(s, s+1) {
				return b.permit(), false, evicted, nil
			}
			continue
		}
		if !deadline.IsZero() && !deadline.After(now) {
			b.rejected[rDeadline].Add(1)
			return Permit{}, false, evicted, rejectDeadline
		}
		if b.q.n >= b.cfg.queue {
			v := b.q.victim(prio)
			if v == nil {
				b.rejected[rQueueFull].Add(1)
				return Permit{}, false, evicted, rejectQueueFull
			}
			b.dequeue(v)
			b.rejected[rEvicted].Add(1)
			evicted = b.decide(v, Permit{}, rejectEvicted, evicted)
			continue
		}
		// Refuse now rather than after a wait that cannot end in time.
		if wait, ok := b.handoffs.expectedWait(b.q.ahead(prio) + 1); ok {
			if b.cfg.maxWait > 0 && wait > b.cfg.maxWait {
				b.rejected[rMaxWait].Add(1)
				return Permit{}, false, evicted, rejectMaxWait
			}
			if !deadline.IsZero() && now.Add(wait).After(deadline) {
				b.rejected[rDeadline].Add(1)
				return Permit{}, false, evicted, rejectDeadline
			}
		}
		if b.state.CompareAndSwap(s, s+queuedOne) {
			break
		}
	}
	w.prio, w.enqueued, w.granted, w.err, w.permit = prio, now, false, nil, Permit{}
	w.expires, w.deadline = time.Time{}, false
	if b.cfg.maxWait > 0 {
		w.expires = now.Add(b.cfg.maxWait)
	}
	if expireAtDeadline && !deadline.IsZero() && (w.expires.IsZero() || deadline.Before(w.expires)) {
		w.expires, w.deadline = deadline, true
	}
	b.q.push(w)
	b.armTimer(now)
	return Permit{}, true, evicted, nil
}

// dequeue takes a still-undecided waiter out of the queue, under the lock.
func (b *Bulkhead) dequeue(w *waiter) {
	b.q.remove(w)
	b.state.Add(^uint64(queuedOne - 1)) // queued−1
}

// decide settles a waiter taken out of the queue, under the lock: a
// blocking Acquire is woken at once; a Submit callback is added to chain,
// for notify to run after the lock is released. Once woken, a blocking
// waiter belongs to its owner again, so decide touches it no more.
func (b *Bulkhead) decide(w *waiter, p Permit, err error, chain *waiter) *waiter {
	w.granted, w.permit, w.err = err == nil, p, err
	if w.fn == nil {
		w.ready <- struct{}{}
		return chain
	}
	w.notify = chain
	return w
}

// notify runs the Submit callbacks of a chain of decided waiters, outside
// the lock, and recycles them. Blocking waiters in the chain were woken by
// decide and recycle themselves.
func (b *Bulkhead) notify(head *waiter) {
	for w := head; w != nil; {
		next := w.notify
		w.notify = nil
		if w.fn != nil {
			fn, p, err := w.fn, w.permit, w.err
			w.fn = nil
			b.recycle(w)
			fn(p, err)
		}
		w = next
	}
}

func (b *Bulkhead) recycle(w *waiter) {
	select { // drain a wake-up the owner did not read
	case <-w.ready:
	default:
	}
	w.permit, w.err, w.fn, w.notify = Permit{}, nil, nil, nil
	b.pool.Put(w)
}

// admitWaiters lets waiters in while there is room under the limit: after
// a release, or when the limit rises. After a cut of the limit, releases
// first bring the inside down to it.
func (b *Bulkhead) admitWaiters() {
	now := b.cfg.clock.Now()
	b.mu.Lock()
	var chain *waiter
	for b.q.n > 0 {
		s := b.state.Load()
		if s&inflightMask >= uint64(b.limit.Load()) {
			break
		}
		// Claim the place first, then take the waiter out. Only locked
		// paths add or remove waiters, but a release outside the lock can
		// change the word under us; a waiter taken out before a failed
		// compare-and-swap would have to go back in, and could not go back
		// to where it was. Left in place, it stays next in line.
		if !b.state.CompareAndSwap(s, s-queuedOne+1) { // queued−1, inflight+1
			continue
		}
		w := b.q.next()
		b.q.remove(w)
		b.grant(now, w, &chain)
	}
	b.armTimer(now)
	b.mu.Unlock()
	b.notify(chain)
}

// grant gives w the place, under the lock, and records its wait.
func (b *Bulkhead) grant(now time.Time, w *waiter, chain **waiter) {
	b.handoffs.observe(now)
	b.waits.observe(now.Sub(w.enqueued))
	*chain = b.decide(w, b.permit(), nil, *chain)
}

// armTimer keeps the one expiry timer set for the earliest expiry in the
// queue, and stopped when there is none. Under the lock.
func (b *Bulkhead) armTimer(now time.Time) {
	if b.q.expiry.Len() == 0 {
		if b.timer != nil {
			b.timer.Stop()
			b.timer, b.timerAt = nil, time.Time{}
		}
		return
	}
	at := b.q.expiry.Min().expires
	if b.timer != nil && b.timerAt.Equal(at) {
		return
	}
	if b.timer != nil {
		b.timer.Stop()
	}
	b.timerAt = at
	b.timer = b.cfg.clock.AfterFunc(max(0, at.Sub(now)), b.expire)
}

// expire refuses every waiter whose maximum wait or deadline has passed.
func (b *Bulkhead) expire() {
	now := b.cfg.clock.Now()
	b.mu.Lock()
	b.timer, b.timerAt = nil, time.Time{}
	var chain *waiter
	for b.q.expiry.Len() > 0 && !b.q.expiry.Min().expires.After(now) {
		w := b.q.expiry.Min()
		b.dequeue(w)
		reason, err := rMaxWait, error(rejectMaxWait)
		if w.deadline {
			reason, err = rDeadline, rejectDeadline
		}
		b.rejected[reason].Add(1)
		chain = b.decide(w, Permit{}, err, chain)
	}
	b.armTimer(now)
	b.mu.Unlock()
	b.notify(chain)
}
