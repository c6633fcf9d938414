package bulkheadhttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/afloat/afloat/bulkhead"
	"github.com/afloat/afloat/bulkhead/bulkheadhttp"
)

// A bulkhead of one: while a request holds the place, the next is refused
// with 503 and a Retry-After.
func ExampleMiddleware() {
	b, _ := bulkhead.New(1)
	busy := make(chan struct{})
	release := make(chan struct{})
	h := bulkheadhttp.Middleware(b)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(busy)
		<-release
	}))
	go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	<-busy // the one place is taken

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
	close(release)
	// Output:
	// 503 1 bulkhead: queue full
}
