package overload

import (
	"container/heap"
	"math"
)

// Server is a processor-sharing server in fluid time: the requests in
// work share its capacity evenly, none gets more than one unit of work per
// unit of time, and capacity a request cannot use goes to the others
// (work-conserving). With Alpha = 0 the capacity is K whatever the load,
// so twice the requests in work run twice as slow (linear slowdown); with
// Alpha > 0 the capacity itself falls as the work in progress exceeds K,
//
//	capacity(n) = K / (1 + Alpha·max(0, n − K)/K),
//
// the bookkeeping, contention and memory that make a collapse metastable.
//
// Because every request runs at the same rate, the server tracks one
// virtual clock V, the work each request has received so far, and a
// request admitted at V₀ with work w finishes when V reaches V₀ + w.
//
// A Server is not safe for concurrent use.
type Server struct {
	K     float64
	Alpha float64

	v    float64 // work every request in work has received since V = 0
	jobs jobHeap
}

// job is a request in work.
type job struct {
	finish float64 // the V at which it is done
	req    *request
}

// InWork returns the number of requests in work.
func (s *Server) InWork() int { return len(s.jobs) }

// capacity returns the units of work per unit of time the server delivers
// with n requests in work.
func (s *Server) capacity(n int) float64 {
	if s.Alpha == 0 || float64(n) <= s.K {
		return s.K
	}
	return s.K / (1 + s.Alpha*(float64(n)-s.K)/s.K)
}

// rate returns the work per unit of time each request receives.
func (s *Server) rate() float64 {
	n := len(s.jobs)
	if n == 0 {
		return 0
	}
	return math.Min(1, s.capacity(n)/float64(n))
}

// add puts a request in work.
func (s *Server) add(r *request, work float64) {
	heap.Push(&s.jobs, job{finish: s.v + work, req: r})
}

// nextCompletion returns how long until the next request is done at the
// current rate, +Inf with nothing in work.
func (s *Server) nextCompletion() float64 {
	if len(s.jobs) == 0 {
		return math.Inf(1)
	}
	return (s.jobs[0].finish - s.v) / s.rate()
}

// advance runs the server for dt, which must not pass the next completion.
func (s *Server) advance(dt float64) {
	s.v += s.rate() * dt
}

// pop removes the request that is done.
func (s *Server) pop() *request {
	j := heap.Pop(&s.jobs).(job)
	if j.finish > s.v {
		s.v = j.finish // absorb rounding: it is done exactly now
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
