package vclock

import (
	"sync"
	"time"

	"github.com/afloat/afloat/internal/heap"
)

// Clock is a virtual clock. It is safe for concurrent use; callbacks run
// without its lock held, so they may use the clock.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers heap.Heap[*Timer] // by instant, then by creation
	seq    uint64            // orders timers due at the same instant by creation
}

// New returns a clock standing at start.
func New(start time.Time) *Clock {
	return &Clock{now: start, timers: heap.New(earlier, func(t *Timer, i int) { t.index = i })}
}

// earlier orders timers by instant, and those due at the same instant by
// creation.
func earlier(a, b *Timer) bool {
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.seq < b.seq
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
	c.timers.Push(t)
	return t
}

// Stop cancels the timer and reports whether it was still pending.
func (t *Timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	t.c.timers.Remove(t.index)
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
		if c.timers.Len() == 0 || c.timers.Min().at.After(t) {
			if t.After(c.now) {
				c.now = t
			}
			c.mu.Unlock()
			return
		}
		next := c.timers.Pop()
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}
