package region_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/region"
)

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
	mw, err := l.Middleware(func(*http.Request) string { return "acme" }, region.WithNow(func() int64 { return now }))
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
