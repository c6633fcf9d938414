package regionhttp

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/region"
)

type options struct {
	cost     func(*http.Request) int64
	reject   func(w http.ResponseWriter, r *http.Request, retryAfter time.Duration, known bool)
	tooLarge func(w http.ResponseWriter, r *http.Request, err error)
	now      func() int64
}

// Option configures Middleware.
type Option func(*options)

// WithCost weighs a request; by default every request costs 1. A tenant's
// per-endpoint weights (quota.Tenant.Costs) plug in here:
// WithCost(func(r *http.Request) int64 { return t.Cost(r.URL.Path) }).
func WithCost(f func(*http.Request) int64) Option {
	return func(o *options) { o.cost = f }
}

// WithNow makes the middleware read now for each request's instant instead
// of the limiter's clock (region.Limiter.Now): for a runner that asks its
// limiter everything on a clock of its own, such as quota/agent's region
// agent, whose decision API, Envoy service and proxy share one clock. now
// returns nanoseconds on the limiter's time line, as the limiter's
// methods that take now expect.
func WithNow(now func() int64) Option {
	return func(o *options) { o.now = now }
}

// WithRejectHandler chooses the response to a refused request; known says
// whether retryAfter is a promise (the next refill) or only the bounded
// retry policy.
func WithRejectHandler(f func(w http.ResponseWriter, r *http.Request, retryAfter time.Duration, known bool)) Option {
	return func(o *options) { o.reject = f }
}

// WithTooLargeHandler chooses the response to a request that costs more
// than its tenant's quota can ever hold in the region; err wraps
// region.ErrTooLarge and says how much that is. The default answers 413
// Content Too Large with err's text and no Retry-After.
func WithTooLargeHandler(f func(w http.ResponseWriter, r *http.Request, err error)) Option {
	return func(o *options) { o.tooLarge = f }
}

// TenantFunc says whose quota a request spends: the tenant of the
// identity the request has proved (its API key, its client certificate,
// a claim of a verified token), never a name the client merely states —
// a header such as X-Tenant lets any client spend another's quota.
type TenantFunc func(*http.Request) string

// Middleware returns net/http middleware that spends each request's cost
// from its tenant's quota in l and answers 429 Too Many Requests when
// there is none, with Retry-After (region.Limiter.DecideAt's rule): the
// earliest of the next local refill that fits the request and the
// activation of a lease already received, rounded up to the second (the
// header's precision); or, when no time can be promised (no valid lease:
// the coordinator is unreachable), the bounded retry policy — when the
// region will next try the coordinator, backing off while it fails, at
// most region.Config.MaxRetryAfter — with the body saying so. A tenant l
// does not serve gets 403. A request that costs more than its tenant's
// quota can ever hold in the region (region.Decision.Never) gets 413
// Content Too Large — the request, as priced, is too large for the quota
// — with no Retry-After, since waiting will not help, and a body saying
// so with the most a request may cost; clients do not retry a 413
// without Retry-After, where they would a 429. Each request's answer
// comes from one region.Decision (Limiter.DecideAt), so that its status
// and Retry-After come from the same lease. tenant is required: without
// it the middleware is refused with an error wrapping quota.ErrConfig.
// The middleware is safe for concurrent use, as the limiter is.
func Middleware(l *region.Limiter, tenant TenantFunc, opts ...Option) (func(http.Handler) http.Handler, error) {
	if l == nil || tenant == nil {
		return nil, fmt.Errorf("%w: regionhttp: Middleware needs a limiter and a tenant function (whose quota a request spends)", quota.ErrConfig)
	}
	o := &options{
		cost:     func(*http.Request) int64 { return 1 },
		reject:   rejectDefault,
		tooLarge: tooLargeDefault,
	}
	for _, opt := range opts {
		opt(o)
	}
	if o.now == nil {
		o.now = l.Now
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			name := tenant(r)
			// Before pricing: a cost function need price only requests of
			// tenants served (WithCost's example looks the tenant up).
			if !l.Serves(name) {
				forbid(w, name)
				return
			}
			d := l.DecideAt(o.now(), name, o.cost(r))
			switch {
			case d.Allowed:
				next.ServeHTTP(w, r)
			case d.Unknown: // removed since Serves said it was served
				forbid(w, name)
			case d.Never:
				o.tooLarge(w, r, d.Err())
			default:
				o.reject(w, r, d.RetryAfter, d.RetryKnown)
			}
		})
	}, nil
}

func forbid(w http.ResponseWriter, tenant string) {
	http.Error(w, fmt.Sprintf("quota: unknown tenant %q", tenant), http.StatusForbidden)
}

func rejectDefault(w http.ResponseWriter, r *http.Request, d time.Duration, known bool) {
	secs := max(1, int(math.Ceil(d.Seconds())))
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(secs))
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusTooManyRequests)
	if known {
		fmt.Fprintf(w, "quota: exhausted; the next refill that fits this request comes in %v\n", d.Round(time.Millisecond))
		return
	}
	fmt.Fprintf(w, "quota: this region holds no valid lease and cannot say when it will; retry after %d s, backing off, at most every %d s\n", secs, secs)
}

func tooLargeDefault(w http.ResponseWriter, r *http.Request, err error) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	fmt.Fprintf(w, "quota: this request can never be admitted: %v; do not retry it\n", err)
}
