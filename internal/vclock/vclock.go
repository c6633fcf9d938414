// Package vclock is a virtual clock for models that drive real components
// in simulated time: time moves only when Advance is called, and timers
// fire inside Advance, in order, on the caller's goroutine.
//
//	c := vclock.New(time.Unix(0, 0))
//	c.AfterFunc(time.Second, func() { fmt.Println("tick") })
//	c.Advance(2 * time.Second) // prints tick
package vclock

import (
	"container/heap"
	"sync"
	"time"
)

// Clock is a virtual clock. It is safe for concurrent use; callbacks run
// without its lock held, so they may use the clock.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers timerHeap
	seq    uint64 // orders timers due at the same instant by creation
}

// New returns a clock standing at start.
func New(start time.Time) *Clock {
	return &Clock{now: start}
}

// Now returns the virtual time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Timer is a callback due at a virtual instant.
type Timer struct {
	c     *Clock
	at    time.Time
	seq   uint64
	f     func()
	index int // in the heap; -1 once fired or stopped
}

// AfterFunc calls f when the clock has advanced d past now. A d ≤ 0 fires
// at the next Advance.
func (c *Clock) AfterFunc(d time.Duration, f func()) *Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &Timer{c: c, at: c.now.Add(d), seq: c.seq, f: f}
	heap.Push(&c.timers, t)
	return t
}

// Stop cancels the timer and reports whether it was still pending.
func (t *Timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&t.c.timers, t.index)
	return true
}

// Advance moves the clock forward by d, firing every timer that falls due,
// each with the clock set to its instant.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	c.AdvanceTo(end)
}

// AdvanceTo moves the clock forward to t (never back), firing every timer
// due by then in order. Timers that callbacks set within the span fire too.
func (c *Clock) AdvanceTo(t time.Time) {
	for {
		c.mu.Lock()
		if len(c.timers) == 0 || c.timers[0].at.After(t) {
			if t.After(c.now) {
				c.now = t
			}
			c.mu.Unlock()
			return
		}
		next := heap.Pop(&c.timers).(*Timer)
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}

type timerHeap []*Timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*Timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}
