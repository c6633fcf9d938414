package bulkheadhttp

import (
	"math"
	"net/http"
	"strconv"

	"github.com/afloat/afloat/bulkhead"
)

type options struct {
	priority func(*http.Request) bulkhead.Priority
	reject   func(http.ResponseWriter, *http.Request, error)
}

// Option configures Middleware.
type Option func(*options)

// WithPriorityFunc chooses each request's priority; the default is the
// one its context carries (bulkhead.WithPriority), PriorityNormal if none.
func WithPriorityFunc(f func(*http.Request) bulkhead.Priority) Option {
	return func(o *options) { o.priority = f }
}

// WithRejectHandler writes the answer to a refused request in place of the
// default 503. err matches bulkhead.ErrRejected and its reason
// (bulkhead.ReasonOf).
func WithRejectHandler(f func(w http.ResponseWriter, r *http.Request, err error)) Option {
	return func(o *options) { o.reject = f }
}

// Middleware returns net/http middleware that runs each request inside b:
// it waits for a permit (queue, maximum wait and the request context's
// deadline apply), runs next, and releases the permit. A refused request
// gets 503 Service Unavailable with a Retry-After of the queue's expected
// wait (b.RetryAfter), at least a second, and the reason in the body. The
// middleware is safe for concurrent use, as the bulkhead is.
func Middleware(b *bulkhead.Bulkhead, opts ...Option) func(http.Handler) http.Handler {
	o := &options{
		priority: func(r *http.Request) bulkhead.Priority { return bulkhead.PriorityFrom(r.Context()) },
		reject:   func(w http.ResponseWriter, r *http.Request, err error) { rejectDefault(b, w, err) },
	}
	for _, opt := range opts {
		opt(o)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The handler sees the priority the request was admitted
			// with, so that a bulkhead further in (a database pool's)
			// ranks it the same.
			if p := o.priority(r); p != bulkhead.PriorityFrom(r.Context()) {
				r = r.WithContext(bulkhead.WithPriority(r.Context(), p))
			}
			permit, err := b.Acquire(r.Context())
			if err != nil {
				o.reject(w, r, err)
				return
			}
			defer permit.Release()
			next.ServeHTTP(w, r)
		})
	}
}

func rejectDefault(b *bulkhead.Bulkhead, w http.ResponseWriter, err error) {
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(b.RetryAfter().Seconds()))))
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write([]byte(err.Error() + "\n"))
}
