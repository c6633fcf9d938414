package bulkheadhttp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/afloat/afloat/bulkhead"
	"github.com/afloat/afloat/bulkhead/bulkheadhttp"
)

func TestMiddleware(t *testing.T) {
	b, _ := bulkhead.New(1)
	busy, release := make(chan struct{}), make(chan struct{})
	var gotPriority bulkhead.Priority
	h := bulkheadhttp.Middleware(b, bulkheadhttp.WithPriorityFunc(func(r *http.Request) bulkhead.Priority {
		if r.Header.Get("X-Priority") == "high" {
			return bulkhead.PriorityHigh
		}
		return bulkhead.PriorityLow
	}))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPriority = bulkhead.PriorityFrom(r.Context())
		if r.URL.Path == "/hold" {
			close(busy)
			<-release
		}
		w.WriteHeader(204)
	}))
	done := make(chan struct{})
	go func() {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/hold", nil))
		close(done)
	}()
	<-busy
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), "queue full") {
		t.Fatalf("refusal: %d %v %q", rec.Code, rec.Header(), rec.Body.String())
	}
	close(release)
	<-done
	rec = httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("X-Priority", "high")
	h.ServeHTTP(rec, req)
	if rec.Code != 204 {
		t.Fatalf("after the release: %d", rec.Code)
	}
	// The priority reaches the handler (it is the bulkhead's context value).
	if gotPriority != bulkhead.PriorityHigh {
		t.Errorf("the handler saw priority %v, want the one it was admitted with, %v", gotPriority, bulkhead.PriorityHigh)
	}

	// A custom refusal.
	b2, _ := bulkhead.New(1)
	hold, _ := b2.TryAcquire()
	custom := bulkheadhttp.Middleware(b2, bulkheadhttp.WithRejectHandler(func(w http.ResponseWriter, r *http.Request, err error) {
		w.Header().Set("X-Reason", string(bulkhead.ReasonOf(err)))
		w.WriteHeader(429)
	}))(http.NotFoundHandler())
	rec = httptest.NewRecorder()
	custom.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 429 || rec.Header().Get("X-Reason") != "queue_full" {
		t.Fatalf("custom refusal: %d %v", rec.Code, rec.Header())
	}
	hold.Release()
}
