package regionhttp_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/region"
	"github.com/afloat/afloat/quota/region/regionhttp"
)

// TestMiddleware: 429 with Retry-After, known (the next refill) or the
// bounded policy (no lease); 403 for an unknown tenant; a request's cost
// from WithCost. On explicit time (WithNow), as the limiter's own tests.
func TestMiddleware(t *testing.T) {
	eu, err := region.New(region.DefaultConfig("eu", "acme"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := regionhttp.Middleware(eu, nil); !errors.Is(err, quota.ErrConfig) {
		t.Fatalf("Middleware(eu, nil): %v, want quota.ErrConfig", err)
	}
	var now int64
	// The tenant comes from what the request proved: here an API key.
	keys := map[string]string{"key-acme": "acme", "key-mallory": "mallory"}
	mw, err := regionhttp.Middleware(eu, func(r *http.Request) string { return keys[r.Header.Get("Authorization")] },
		regionhttp.WithNow(func() int64 { return now }),
		regionhttp.WithCost(func(r *http.Request) int64 {
			if r.URL.Path == "/export" {
				return 100
			}
			return 1
		}))
	if err != nil {
		t.Fatal(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	get := func(path, tenant string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "key-"+tenant)
		h.ServeHTTP(rec, req)
		return rec
	}
	// No lease yet: the bounded policy.
	rec := get("/", "acme")
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), "no valid lease") {
		t.Fatalf("no lease: %d %q %q", rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
	}
	if rec := get("/", "mallory"); rec.Code != 403 {
		t.Fatalf("unknown tenant: %d", rec.Code)
	}
	// A lease of 500 a second, its burst of 1,000 transferred: after a
	// request of 1 token, 9 exports of 100 pass; the tenth lacks a token,
	// 2 ms away: Retry-After 1.
	req, err := eu.Request(now, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if in := eu.Install(now, quota.Grant{Lease: quota.Lease{ID: 1, Tenant: "acme", Region: "eu", Epoch: 1,
		Rate: 500 * quota.One, Burst: 1000 * quota.One, Transfer: 1000 * quota.One}, Seq: req.Seq, ValidFor: time.Hour, Margin: time.Second}); !in.OK() {
		t.Fatalf("install: %v", in.Outcome)
	}
	if rec := get("/", "acme"); rec.Code != 200 || rec.Body.String() != "ok" {
		t.Fatalf("with a lease: %d %s", rec.Code, rec.Body)
	}
	exports := 0
	for get("/export", "acme").Code == 200 {
		exports++
	}
	rec = get("/export", "acme")
	ra := rec.Header().Get("Retry-After")
	if exports != 9 || rec.Code != 429 || ra != "1" || !strings.Contains(rec.Body.String(), "next refill") {
		t.Fatalf("exhausted after %d exports: %d %q %q; want 9, then 429 with Retry-After 1 and the next refill", exports, rec.Code, ra, rec.Body.String())
	}
}

// TestMiddlewareWithNow: a middleware given a clock (WithNow) decides on
// that clock's instants, not the limiter's: a runner that keeps its own
// clock asks everything on it. A burst of 10 is spent at instant 0 and
// refused with Retry-After 1 (a token a tenth of a second later, derated
// for drift); 101 ms on, one token more passes, and no more.
func TestMiddlewareWithNow(t *testing.T) {
	l, err := region.New(region.DefaultConfig("eu", "acme"))
	if err != nil {
		t.Fatal(err)
	}
	var now int64
	req, err := l.Request(now, "acme")
	if err != nil {
		t.Fatal(err)
	}
	in := l.Install(now, quota.Grant{Lease: quota.Lease{ID: 1, Tenant: "acme", Region: "eu", Epoch: 1,
		Rate: 10 * quota.One, Burst: 10 * quota.One, Transfer: 10 * quota.One}, Seq: req.Seq, ValidFor: time.Hour, Margin: time.Second})
	if !in.OK() {
		t.Fatalf("install: %v", in.Outcome)
	}
	mw, err := regionhttp.Middleware(l, func(*http.Request) string { return "acme" }, regionhttp.WithNow(func() int64 { return now }))
	if err != nil {
		t.Fatal(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	admitted := func(n int) (ok int, last *httptest.ResponseRecorder) {
		for range n {
			last = httptest.NewRecorder()
			h.ServeHTTP(last, httptest.NewRequest("GET", "/", nil))
			if last.Code == 200 {
				ok++
			}
		}
		return ok, last
	}
	for i, step := range []struct {
		at       time.Duration
		asks, ok int
	}{{0, 15, 10}, {101 * time.Millisecond, 3, 1}, {101 * time.Millisecond, 1, 0}} {
		now = int64(step.at)
		ok, last := admitted(step.asks)
		if ok != step.ok || last.Code != 429 || last.Header().Get("Retry-After") != "1" {
			t.Fatalf("step %d: at %v, %d of %d admitted, the last %d with Retry-After %q; want %d, then 429 with 1",
				i, step.at, ok, step.asks, last.Code, last.Header().Get("Retry-After"), step.ok)
		}
	}
}

// TestMiddlewareRejectHandler: WithRejectHandler answers a refusal in
// place of the default 429, and is told whether the wait is a promise.
func TestMiddlewareRejectHandler(t *testing.T) {
	l, err := region.New(region.DefaultConfig("eu", "acme"))
	if err != nil {
		t.Fatal(err)
	}
	var known []bool
	mw, err := regionhttp.Middleware(l, func(*http.Request) string { return "acme" },
		regionhttp.WithNow(func() int64 { return 0 }),
		regionhttp.WithRejectHandler(func(w http.ResponseWriter, r *http.Request, d time.Duration, k bool) {
			known = append(known, k)
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	mw(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusServiceUnavailable || len(known) != 1 || known[0] {
		t.Fatalf("no lease: %d, handler told %v; want 503 from the handler, told the wait is no promise", rec.Code, known)
	}
}

// TestMiddlewareTooLarge: a request that costs more than its tenant's
// quota can ever hold in the region (the grant's Ceiling) gets 413 with
// no Retry-After and a body that says it can never be admitted; one
// within the ceiling that lacks tokens gets the ordinary 429.
// WithTooLargeHandler replaces the 413.
func TestMiddlewareTooLarge(t *testing.T) {
	l, err := region.New(region.DefaultConfig("eu", "acme"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := l.Request(0, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if in := l.Install(0, quota.Grant{Lease: quota.Lease{ID: 1, Tenant: "acme", Region: "eu", Epoch: 1,
		Rate: 10 * quota.One, Burst: 10 * quota.One}, Seq: req.Seq, ValidFor: time.Hour, Margin: time.Second,
		Ceiling: 50 * quota.One}); !in.OK() {
		t.Fatalf("install: %v", in.Outcome)
	}
	var cost int64
	var custom []error
	for i, step := range []struct {
		cost   int64
		custom bool
		code   int
		retry  string
		body   string
	}{
		{51, false, 413, "", "can never be admitted"},
		{50, false, 429, "1", "retry after"}, // a larger share may come
		{51, true, 422, "", ""},
	} {
		opts := []regionhttp.Option{regionhttp.WithNow(func() int64 { return 0 }),
			regionhttp.WithCost(func(*http.Request) int64 { return cost })}
		if step.custom {
			opts = append(opts, regionhttp.WithTooLargeHandler(func(w http.ResponseWriter, r *http.Request, err error) {
				custom = append(custom, err)
				w.WriteHeader(http.StatusUnprocessableEntity)
			}))
		}
		mw, err := regionhttp.Middleware(l, func(*http.Request) string { return "acme" }, opts...)
		if err != nil {
			t.Fatal(err)
		}
		cost = step.cost
		rec := httptest.NewRecorder()
		mw(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != step.code || rec.Header().Get("Retry-After") != step.retry || !strings.Contains(rec.Body.String(), step.body) {
			t.Errorf("step %d: cost %d: %d, Retry-After %q, %q; want %d, %q, a body with %q",
				i, step.cost, rec.Code, rec.Header().Get("Retry-After"), rec.Body.String(), step.code, step.retry, step.body)
		}
	}
	if len(custom) != 1 || !errors.Is(custom[0], region.ErrTooLarge) {
		t.Errorf("WithTooLargeHandler was told %v; want one error wrapping region.ErrTooLarge", custom)
	}
}
