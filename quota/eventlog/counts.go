package eventlog

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The intervals a Counter may count over. Below 10 ms a count holds
// about as few decisions as a line each would; above 10 s the checker's
// slack (R times the interval) dwarfs most tenants' B.
const (
	MinCountInterval = 10 * time.Millisecond
	MaxCountInterval = 10 * time.Second
	// DefaultCountInterval is the region agent's: a line a second for
	// each tenant that had traffic, for a slack of R·1 s
	// (docs/quota/operations.md, "Event logs in production").
	DefaultCountInterval = time.Second
)

// ErrCountInterval: NewCounter (or OpenFile's Counted) was given an
// interval out of range.
var ErrCountInterval = errors.New("eventlog: count interval out of range")

// Counter writes a region's decisions as counts: instead of a line for
// every admit and reject event, one counts event for each tenant and
// region that had any in an interval, with the tokens and decisions
// admitted and refused (Event). Intervals are fixed slices of the clock,
// [k·every, (k+1)·every), so that a log's counts line up however often
// they are flushed; every other event passes on to the writer at once.
//
// A count is written when Flush is told its interval has ended. A
// decision that comes after its interval's count was written (a
// goroutine stamped it before the interval ended and logged it after the
// flush) opens a second count of the same interval: counts are never
// stretched beyond their interval, and the checker adds them up.
//
// The counts of one interval are written in the order of tenant and
// region, so that a run's log stays a function of the run; a Counter's
// output is thus not in time order with the events that passed through,
// which is why its logs are merged (Merge) before they are checked, as
// every log of a real process is. A Counter is not safe for concurrent
// use (File, which counts under its lock, is).
type Counter struct {
	w     Writer
	every int64
	open  map[countKey]*tally
}

type countKey struct {
	tenant, region string
	k              int64 // the interval, [k·every, (k+1)·every)
}

type tally struct {
	last                            int64 // the latest decision's time
	admits, n, rejects, rejectedTok int64
}

// NewCounter counts the decisions written to it over intervals of every
// (MinCountInterval to MaxCountInterval, else ErrCountInterval) and
// writes the counts, and every other event, to w.
func NewCounter(w Writer, every time.Duration) (*Counter, error) {
	if every < MinCountInterval || every > MaxCountInterval {
		return nil, fmt.Errorf("%w: %v: want %v to %v", ErrCountInterval, every, MinCountInterval, MaxCountInterval)
	}
	return &Counter{w: w, every: int64(every), open: map[countKey]*tally{}}, nil
}

// Write implements Writer: an admit or reject event is counted, any
// other passed on.
func (c *Counter) Write(e *Event) {
	if e.Kind != Admit && e.Kind != Reject {
		c.w.Write(e)
		return
	}
	k := countKey{e.Tenant, e.Region, floorDiv(e.T, c.every)}
	t := c.open[k]
	if t == nil {
		t = &tally{last: e.T}
		c.open[k] = t
	}
	t.last = max(t.last, e.T)
	if e.Kind == Admit {
		t.admits++
		t.n += e.N
	} else {
		t.rejects++
		t.rejectedTok += e.N
	}
}

// Flush writes the counts of every interval that ended by now (its end ≤
// now).
func (c *Counter) Flush(now int64) { c.flush(now, false) }

// FlushAll writes every count, those of intervals still open too: their
// interval is cut at now, or just after its last decision if that is
// later. Call it when the log ends.
func (c *Counter) FlushAll(now int64) { c.flush(now, true) }

func (c *Counter) flush(now int64, all bool) {
	var done []countKey
	for k := range c.open {
		if all || (k.k+1)*c.every <= now {
			done = append(done, k)
		}
	}
	slices.SortFunc(done, func(a, b countKey) int {
		return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(a.tenant, b.tenant), cmp.Compare(a.region, b.region))
	})
	for _, k := range done {
		t := c.open[k]
		delete(c.open, k)
		from, end := k.k*c.every, (k.k+1)*c.every
		if end > now {
			end = max(now, t.last+1) // ≤ (k+1)·every: last is in the interval
		}
		c.w.Write(&Event{T: end, Kind: Counts, Tenant: k.tenant, Region: k.region, N: t.n, Span: end - from,
			Admits: t.admits, Rejects: t.rejects, Rejected: t.rejectedTok})
	}
}

// floorDiv is a/b rounded down (b > 0): intervals of times before 0 too.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
