package service

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/remote"
)

// The load benchmarks measure the services over loopback HTTP; they run
// only when asked (AFLOAT_QUOTA_BENCH=1), are bounded in time, and print
// what they measured: docs/benchmarks.md quotes them.

func benchOnly(t *testing.T) {
	if os.Getenv("AFLOAT_QUOTA_BENCH") == "" {
		t.Skip("a load benchmark: AFLOAT_QUOTA_BENCH=1 to run it")
	}
}

// openLoop calls f at rate calls a second for d, from workers goroutines,
// and returns the latencies of the calls that succeeded (from when a
// worker sent each), the count of those that failed, and the lag of the
// sends behind their schedule: a backlog (too few workers, a stalled
// server) shows there, so that a latency measured from the send cannot
// hide it (coordinated omission).
func openLoop(rate float64, d time.Duration, workers int, f func(i int) error) (lat, lag []time.Duration, failed int64, elapsed time.Duration) {
	var mu sync.Mutex
	var fails atomic.Int64
	type job struct {
		i  int
		at time.Time
	}
	jobs := make(chan job, 1<<16)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var mine, late []time.Duration
			for j := range jobs {
				t0 := time.Now()
				late = append(late, t0.Sub(j.at))
				if err := f(j.i); err != nil {
					fails.Add(1)
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			lag = append(lag, late...)
			mu.Unlock()
		})
	}
	start := time.Now()
	n := int(rate * d.Seconds())
	for i := range n {
		at := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if w := time.Until(at); w > 0 {
			time.Sleep(w)
		}
		jobs <- job{i, at}
	}
	close(jobs)
	wg.Wait()
	elapsed = time.Since(start)
	slices.Sort(lat)
	slices.Sort(lag)
	return lat, lag, fails.Load(), elapsed
}

func pct(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	return lat[min(len(lat)-1, int(p*float64(len(lat))))]
}

// TestBenchDecisionAPI: a region agent's POST /v1/allow at 10,000 checks a
// second over loopback HTTP for 10 s (the load generator in the same
// process, on keep-alive connections). Target: p99 ≤ 1 ms.
func TestBenchDecisionAPI(t *testing.T) {
	benchOnly(t)
	cfg, err := ParseConfig([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A coordinator in process (a ledger in memory: this measures the
	// agent's API, which never calls the coordinator per decision).
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: cfg.QuotaTenants()}, coordinator.NewMemLedger())
	if err != nil {
		t.Fatal(err)
	}
	go srv.Run(ctx)
	h, _ := remote.Handler(remote.HandlerConfig{Tokens: cfg.Tokens(), Lead: func() (remote.Backend, string) { return srv, "" }})
	cl, _ := net.Listen("tcp", "127.0.0.1:0")
	go http.Serve(cl, h)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := NewAgent(RegionOptions{Config: cfg, Name: "eu", Coordinators: []string{"http://" + cl.Addr().String()}, Listen: "127.0.0.1:0", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	a.o.Ready = func(s string) { ready <- s }
	go a.Run(ctx)
	url := "http://" + <-ready + "/v1/allow"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 5 * time.Second}
	call := func(int) error {
		resp, err := client.Post(url, "application/json", strings.NewReader(`{"tenant":"acme","endpoint":"/","n":1}`))
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	openLoop(2000, time.Second, 64, call) // warm: connections, a lease
	const rate = 10_000
	lat, lag, failed, elapsed := openLoop(rate, 10*time.Second, 64, call)
	fmt.Printf("decision API: %d checks in %v = %.0f/s (offered %d/s), %d failed; latency p50 %v p99 %v p99.9 %v max %v; sends behind schedule p50 %v p99 %v\n",
		len(lat), elapsed.Round(time.Millisecond), float64(len(lat))/elapsed.Seconds(), rate, failed,
		pct(lat, 0.5), pct(lat, 0.99), pct(lat, 0.999), pct(lat, 1), pct(lag, 0.5), pct(lag, 0.99))
}
