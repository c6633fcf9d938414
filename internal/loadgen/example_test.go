package loadgen_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/afloat/afloat/internal/loadgen"
)

// Offer a server 1,000 requests a second for a tenth of a second, on up to
// 8 keep-alive connections, and read the p99 from each request's
// scheduled time.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok") //nolint:errcheck // the client went away
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	req := []byte("GET / HTTP/1.1\r\nHost: " + addr + "\r\n\r\n")
	r, err := loadgen.Spin(addr, loadgen.HTTP1(req), 8, 1000, 100*time.Millisecond)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(r.Sched), "answered; p99 over 0:", loadgen.Pct(r.Sched, 0.99) > 0)
	// Output: 100 answered; p99 over 0: true
}
