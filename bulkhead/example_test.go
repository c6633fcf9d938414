package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/afloat/afloat/bulkhead"
)

func Example() {
	b, _ := bulkhead.New(2) // two inside, no queue
	ctx := context.Background()
	p1, _ := b.Acquire(ctx)
	p2, _ := b.Acquire(ctx)
	_, err := b.Acquire(ctx)
	fmt.Println(errors.Is(err, bulkhead.ErrRejected), bulkhead.ReasonOf(err))
	p1.Release()
	p2.Release()
	st := b.Stats()
	fmt.Println(st.Admitted, st.Completed, st.Rejected[bulkhead.ReasonQueueFull])
	// Output:
	// true queue_full
	// 2 2 1
}

func ExampleBulkhead_Middleware() {
	b, _ := bulkhead.New(1)
	busy := make(chan struct{})
	release := make(chan struct{})
	h := b.Middleware()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
