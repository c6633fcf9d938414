package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/afloat/afloat/web"
)

// The console on a loopback listener of its own, asked for the first two
// minutes of a run as a page would ask: a POST with an exact JSON body.
func ExampleServe() {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // any free port
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- web.Serve(ctx, ln, web.DefaultConfig()) }()
	defer func() { stop(); <-done }() // a graceful shutdown

	body := `{"scenario": "steady", "seed": 1, "noise": false, "to": 2}`
	resp, err := http.Post("http://"+ln.Addr().String()+"/api/run", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var run struct {
		Share  string
		Frames []struct {
			Clock        string
			RequestsPerS float64 `json:"requests_per_s"`
			Serving      int
			P99          float64 `json:"p99_ms"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&run); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Status, run.Share)
	for _, f := range run.Frames {
		fmt.Printf("%s  %.0f requests/s  %d serving  p99 %.0f ms\n", f.Clock, f.RequestsPerS, f.Serving, f.P99)
	}
	// Output:
	// 200 OK noise=0&scenario=steady&seed=1
	// 12:00  1125 requests/s  10 serving  p99 342 ms
	// 12:01  1125 requests/s  10 serving  p99 342 ms
}
