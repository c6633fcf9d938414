package overload

import (
	"container/heap"
	"math"
)

// server is a processor-sharing server in fluid time: the requests in
// work share its capacity evenly, none gets more than one unit of work per
// unit of time, and capacity a request cannot use goes to the others
// (work-conserving). With alpha = 0 the capacity is k whatever the load,
// so twice the requests in work run twice as slow (linear slowdown, the
// seed's "best case"); with alpha > 0 the capacity itself falls as the
// work in progress exceeds k,
//
//	capacity(n) = k / (1 + alpha·max(0, n − k)/k),
//
// the bookkeeping, contention and memory that make a collapse metastable.
//
// Because every request runs at the same rate, the server tracks one
// virtual clock v, the work each request has received so far, and a
// request admitted at v₀ with work w finishes when v reaches v₀ + w.
//
// It also counts the requests in work whose client has gone, so that it
// can say how much of its capacity went to them (wasted work).
type server struct {
	k     float64
	alpha float64

	v    float64 // work every request in work has received since v = 0
	gone int     // requests in work whose client has given up
	jobs jobHeap
}

// job is a request in work.
type job struct {
	finish float64 // the v at which it is done
	req    *request
}

// inWork returns the number of requests in work.
func (s *server) inWork() int { return len(s.jobs) }

// capacity returns the units of work per unit of time the server delivers
// with n requests in work.
func (s *server) capacity(n int) float64 {
	if s.alpha == 0 || float64(n) <= s.k {
		return s.k
	}
	return s.k / (1 + s.alpha*(float64(n)-s.k)/s.k)
}

// rate returns the work per unit of time each request receives.
func (s *server) rate() float64 {
	n := len(s.jobs)
	if n == 0 {
		return 0
	}
	return math.Min(1, s.capacity(n)/float64(n))
}

// add puts a request in work.
func (s *server) add(r *request) {
	r.inWork = true
	if r.gone {
		s.gone++
	}
	heap.Push(&s.jobs, job{finish: s.v + r.work, req: r})
}

// giveUp records that the client of a request in work has gone.
func (s *server) giveUp() { s.gone++ }

// nextCompletion returns how long until the next request is done at the
// current rate, +Inf with nothing in work.
func (s *server) nextCompletion() float64 {
	if len(s.jobs) == 0 {
		return math.Inf(1)
	}
	return (s.jobs[0].finish - s.v) / s.rate()
}

// advance runs the server for dt, which must not pass the next completion,
// and returns the work it did: in all, and for requests whose client has
// gone.
func (s *server) advance(dt float64) (work, wasted float64) {
	r := s.rate()
	s.v += r * dt
	return r * float64(len(s.jobs)) * dt, r * float64(s.gone) * dt
}

// pop removes the request that is done.
func (s *server) pop() *request {
	j := heap.Pop(&s.jobs).(job)
	if j.finish > s.v {
		s.v = j.finish // absorb rounding: it is done exactly now
	}
	j.req.inWork = false
	if j.req.gone {
		s.gone--
	}
	return j.req
}

type jobHeap []job

func (h jobHeap) Len() int           { return len(h) }
func (h jobHeap) Less(i, j int) bool { return h[i].finish < h[j].finish }
func (h jobHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *jobHeap) Push(x any)        { *h = append(*h, x.(job)) }
func (h *jobHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	*h = old[:len(old)-1]
	return j
}

// deadlines holds the tries still waiting for an answer, earliest
// deadline first, and among equal deadlines in the order they came (so
// that a run whose clients all wait the same time gives up in arrival
// order). Clients' patience varies, so this is a heap, not a queue. It is
// written out rather than internal/heap's generic one, with each entry's
// key beside its pointer: a World Cup run keeps some 10⁵ tries here, and
// the calls through the generic heap's functions cost a run 13 % (1.14 s
// of CPU against 1.01 s, medians of eight runs each, interleaved).
type deadlines struct {
	h   []waiter
	seq uint64
}

type waiter struct {
	deadline float64
	seq      uint64
	r        *request
}

func (d *deadlines) before(i, j int) bool {
	a, b := &d.h[i], &d.h[j]
	return a.deadline < b.deadline || a.deadline == b.deadline && a.seq < b.seq
}

func (d *deadlines) push(r *request) {
	d.seq++
	d.h = append(d.h, waiter{r.deadline, d.seq, r})
	for i := len(d.h) - 1; i > 0; {
		up := (i - 1) / 2
		if !d.before(i, up) {
			break
		}
		d.h[i], d.h[up] = d.h[up], d.h[i]
		i = up
	}
}

// next returns the try with the earliest deadline, nil if none.
func (d *deadlines) next() *request {
	if len(d.h) == 0 {
		return nil
	}
	return d.h[0].r
}

func (d *deadlines) pop() {
	n := len(d.h) - 1
	d.h[0] = d.h[n]
	d.h[n] = waiter{}
	d.h = d.h[:n]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < n && d.before(l, least) {
			least = l
		}
		if r < n && d.before(r, least) {
			least = r
		}
		if least == i {
			return
		}
		d.h[i], d.h[least] = d.h[least], d.h[i]
		i = least
	}
}

// retry is a client that gave up and will try again.
type retry struct {
	at      float64
	attempt int
}

type retryHeap []retry

func (h retryHeap) Len() int           { return len(h) }
func (h retryHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h retryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *retryHeap) Push(x any)        { *h = append(*h, x.(retry)) }
func (h *retryHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}
