package region

import "sync/atomic"

// Run's schedule: when each tenant next needs a look, kept so that a pass
// touches the tenants whose time has come and no others — a region of
// 100,000 tenants must not ask each of them, under its lock, 20 times a
// second whether it is due.
//
//   - timers: a heap of tenants by the instant at which the passing of
//     time alone may make them due (Limiter.nextLook, which follows Due's
//     rules); a pass pops those whose instant has come and asks Due.
//   - ready and fresh: heaps of the tenants Due said yes to that wait
//     for a place in a call — ready those with a valid lease, by its end;
//     fresh those without, first come, first served. Renewals go first,
//     and first leases in calls of their own, with a place of their own
//     beside them (Run): keeping a lease is the cheap work — a renewal
//     that changes nothing needs no write at the coordinator (a covered
//     renewal) — and a lease lost costs a write to get back, so under a
//     coordinator that cannot keep up, renewing first keeps the leases
//     there are, where leasing first would let them lapse, each lapse one
//     more write for it to make; and a renewal waiting behind first
//     leases in one call would wait for their writes.
//   - attention: the tenants that an event put up at once — a refusal
//     that made a tenant hot, a nudge, a tenant added or removed —
//     pushed by paths that must not lock or wait (Allow's among them).
//
// A tenant is in at most one of the heaps, or in a call, at a time; and
// on the attention list at most once. So the schedule's memory is linear
// in the tenants served, whatever the backlog.

// attention is a lock-free stack of buckets (Treiber's), each on it at
// most once (bucket.queued). Any goroutine pushes; Run alone takes.
type attention struct {
	head atomic.Pointer[bucket]
}

// push puts b up for Run's attention, unless it is up already.
func (a *attention) push(b *bucket) {
	if !b.queued.CompareAndSwap(false, true) {
		return
	}
	for {
		h := a.head.Load()
		b.upNext = h // published by the swap below; read only after it
		if a.head.CompareAndSwap(h, b) {
			return
		}
	}
}

// take empties the stack and calls f on each bucket it held. A bucket
// pushed again while f runs is on the next take.
func (a *attention) take(f func(*bucket)) {
	for b := a.head.Swap(nil); b != nil; {
		next := b.upNext
		b.upNext = nil
		b.queued.Store(false)
		f(b)
		b = next
	}
}

// runState is a bucket's place in Run's schedule. Only Run's goroutine
// reads and writes it.
type runState struct {
	pos     [2]int // 1 + its index in the timers and ready heaps; 0 when not in one
	at      int64  // timers: when to look at it next
	urgency int64  // ready: its lease's end; fresh: noLease
	order   uint64 // ready, fresh: the order it became due in, among equals
	calling bool   // a call carries its request
}

// noLease is the urgency of a tenant without a valid lease: after every
// lease's end.
const noLease = int64(^uint64(0) >> 1)

// Which heap.
const (
	timersHeap = iota
	readyHeap
)

// bucketHeap is a min-heap of buckets that know their place in it
// (runState.pos), so that one can be taken out of the middle. Each item
// carries its bucket's key as it was pushed (a key does not change while
// its bucket is in a heap: Run takes a bucket out to schedule it anew):
// the comparisons of a sift read the heap's own array, not a bucket each
// — at 100,000 tenants the buckets are scattered over hundreds of MB, and
// following them was a quarter of an agent's CPU (docs/benchmarks.md,
// BenchmarkScheduleHeap).
type bucketHeap struct {
	which int
	items []heapItem
}

// heapItem is a bucket in a heap, with its key: timers' at (order 0), or
// ready and fresh's urgency and order.
type heapItem struct {
	key   int64
	order uint64
	b     *bucket
}

func (h *bucketHeap) len() int { return len(h.items) }

func (h *bucketHeap) less(i, j int) bool {
	a, b := &h.items[i], &h.items[j]
	if a.key != b.key {
		return a.key < b.key
	}
	return a.order < b.order
}

func (h *bucketHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].b.run.pos[h.which] = i + 1
	h.items[j].b.run.pos[h.which] = j + 1
}

// arity is the heap's: four children a node, so half the levels of a
// binary heap — each level a bucket's place written (pos) — for a few
// more comparisons, which read the heap's own array.
const arity = 4

func (h *bucketHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / arity
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *bucketHeap) down(i int) {
	n := len(h.items)
	for {
		l := arity*i + 1
		if l >= n {
			return
		}
		m := l
		for c := l + 1; c < min(l+arity, n); c++ {
			if h.less(c, m) {
				m = c
			}
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}

// push adds b, which is in no heap of this kind, by its key now.
func (h *bucketHeap) push(b *bucket) {
	it := heapItem{key: b.run.at, b: b}
	if h.which != timersHeap {
		it.key, it.order = b.run.urgency, b.run.order
	}
	h.items = append(h.items, it)
	b.run.pos[h.which] = len(h.items)
	h.up(len(h.items) - 1)
}

// min is the least bucket; the heap must not be empty.
func (h *bucketHeap) min() *bucket { return h.items[0].b }

// pop takes out the least bucket; the heap must not be empty.
func (h *bucketHeap) pop() *bucket {
	b := h.items[0].b
	h.remove(b)
	return b
}

// remove takes b out, if it is in this heap.
func (h *bucketHeap) remove(b *bucket) {
	i := b.run.pos[h.which] - 1
	if i < 0 || i >= len(h.items) || h.items[i].b != b {
		return
	}
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = heapItem{}
	h.items = h.items[:last]
	b.run.pos[h.which] = 0
	if i != last {
		h.down(i)
		h.up(i)
	}
	// Let a heap that held a crowd (a region's start) give the memory back.
	if c := cap(h.items); c > 1024 && len(h.items) < c/4 {
		h.items = append([]heapItem(nil), h.items...)
	}
}

// has says whether b is in this heap.
func (h *bucketHeap) has(b *bucket) bool {
	i := b.run.pos[h.which] - 1
	return i >= 0 && i < len(h.items) && h.items[i].b == b
}
