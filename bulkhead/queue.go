package bulkhead

import (
	"time"

	"github.com/afloat/afloat/internal/heap"
)

// waiter is a request in the queue. Waiters are pooled: a blocking Acquire
// reuses one, and its ready channel, from call to call.
type waiter struct {
	prio     Priority
	enqueued time.Time
	expires  time.Time // when it leaves the queue unserved; zero for never
	deadline bool      // expires is the caller's deadline, not the queue's maximum wait

	prev, next *waiter // in its tier, oldest first
	heapIndex  int     // in the expiry heap; -1 when not there

	// Decided under the bulkhead's lock, read by the owner after ready.
	granted bool
	err     error
	permit  Permit

	ready  chan struct{}       // buffered 1: a blocking Acquire waits on it
	fn     func(Permit, error) // a Submit callback, run after the lock is released
	notify *waiter             // the next in a list of decided waiters to call back
}

// tier is one priority's waiters, a doubly linked list, oldest at head.
type tier struct {
	head, tail *waiter
	n          int
}

func (t *tier) pushBack(w *waiter) {
	w.prev, w.next = t.tail, nil
	if t.tail != nil {
		t.tail.next = w
	} else {
		t.head = w
	}
	t.tail = w
	t.n++
}

func (t *tier) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		t.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		t.tail = w.prev
	}
	w.prev, w.next = nil, nil
	t.n--
}

// queue holds the waiters of every priority and the heap of their expiries.
// It is the bulkhead's queueing discipline; the bulkhead's lock guards it.
type queue struct {
	tiers     [numPriorities]tier
	n         int
	expiry    heap.Heap[*waiter] // by when they leave the queue unserved
	lifoAfter int                // LIFO within a tier once n reaches this; 0 for FIFO always
}

func newQueue(lifoAfter int) queue {
	return queue{
		lifoAfter: lifoAfter,
		expiry: heap.New(func(a, b *waiter) bool { return a.expires.Before(b.expires) },
			func(w *waiter, i int) { w.heapIndex = i }),
	}
}

func (q *queue) push(w *waiter) {
	q.tiers[w.prio].pushBack(w)
	q.n++
	w.heapIndex = -1
	if !w.expires.IsZero() {
		q.expiry.Push(w)
	}
}

func (q *queue) remove(w *waiter) {
	q.tiers[w.prio].remove(w)
	q.n--
	if w.heapIndex >= 0 {
		q.expiry.Remove(w.heapIndex)
	}
}

// next returns the waiter to serve: the highest priority first; within it
// the oldest, or the newest once the backlog has reached lifoAfter — under
// a backlog the oldest requests are the likeliest to have been given up by
// their clients, and serving the newest keeps the latency of most of them
// low (Facebook's "adaptive LIFO").
func (q *queue) next() *waiter {
	for p := numPriorities - 1; p >= 0; p-- {
		t := &q.tiers[p]
		if t.n == 0 {
			continue
		}
		if q.lifoAfter > 0 && q.n >= q.lifoAfter {
			return t.tail
		}
		return t.head
	}
	return nil
}

// victim returns the waiter a newcomer of priority p may evict from a full
// queue: the oldest of the lowest priority below p, or nil.
func (q *queue) victim(p Priority) *waiter {
	for lo := Priority(0); lo < p; lo++ {
		if t := &q.tiers[lo]; t.n > 0 {
			return t.head
		}
	}
	return nil
}

// ahead counts the waiters a newcomer of priority p would wait behind.
func (q *queue) ahead(p Priority) int {
	n := 0
	lifo := q.lifoAfter > 0 && q.n+1 >= q.lifoAfter
	for hi := numPriorities - 1; hi >= p; hi-- {
		if hi == p && lifo {
			break // it would be served first within its own priority
		}
		n += q.tiers[hi].n
	}
	return n
}
