package bulkhead

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

type middleware struct {
	priority func(*http.Request) Priority
	reject   func(http.ResponseWriter, *http.Request, error)
}

// MiddlewareOption configures Middleware.
type MiddlewareOption func(*middleware)

// WithPriorityFunc chooses each request's priority; the default is the
// one its context carries (WithPriority), PriorityNormal if none.
func WithPriorityFunc(f func(*http.Request) Priority) MiddlewareOption {
	return func(m *middleware) { m.priority = f }
}

// WithRejectHandler writes the answer to a refused request in place of the
// default 503. err matches ErrRejected and its reason (ReasonOf).
func WithRejectHandler(f func(w http.ResponseWriter, r *http.Request, err error)) MiddlewareOption {
	return func(m *middleware) { m.reject = f }
}

// Middleware returns net/http middleware that runs each request inside the
// bulkhead: it waits for a permit (queue, maximum wait and the request
// context's deadline apply), runs next, and releases the permit. A refused
// request gets 503 Service Unavailable with a Retry-After of the queue's
// expected wait, at least a second, and the reason in the body.
func (b *Bulkhead) Middleware(opts ...MiddlewareOption) func(http.Handler) http.Handler {
	m := &middleware{
		priority: func(r *http.Request) Priority { return PriorityFrom(r.Context()) },
		reject:   b.rejectDefault,
	}
	for _, o := range opts {
		o(m)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			if p := m.priority(r); p != PriorityFrom(ctx) {
				ctx = WithPriority(ctx, p)
			}
			permit, err := b.Acquire(ctx)
			if err != nil {
				m.reject(w, r, err)
				return
			}
			defer permit.Release()
			next.ServeHTTP(w, r)
		})
	}
}

func (b *Bulkhead) rejectDefault(w http.ResponseWriter, r *http.Request, err error) {
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(b.RetryAfter().Seconds()))))
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write([]byte(err.Error() + "\n"))
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
