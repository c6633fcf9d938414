package vclock

import (
	"testing"
	"time"
)

func TestTimersFireInOrderWithTheirInstant(t *testing.T) {
	start := time.Unix(100, 0)
	c := New(start)
	var got []time.Duration
	record := func() { got = append(got, c.Now().Sub(start)) }
	c.AfterFunc(3*time.Second, record)
	c.AfterFunc(1*time.Second, func() {
		record()
		c.AfterFunc(500*time.Millisecond, record) // set from a callback, due within the span
	})
	stopped := c.AfterFunc(2*time.Second, record)
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop should report true once, then false")
	}
	c.Advance(10 * time.Second)
	want := []time.Duration{time.Second, 1500 * time.Millisecond, 3 * time.Second}
	if len(got) != len(want) {
		t.Fatalf("fired at %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("step %d: fired at %v, want %v", i, got[i], want[i])
		}
	}
	if c.Now().Sub(start) != 10*time.Second {
		t.Fatalf("clock at %v, want 10s", c.Now().Sub(start))
	}
	c.AdvanceTo(start) // never back
	if c.Now().Sub(start) != 10*time.Second {
		t.Fatal("the clock went back")
	}
}
