package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the throughput search start this test binary as a
// service ("serve afloat"), as it starts the command.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "serve" {
		if err := serve(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "quotapeers:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestShortRun runs the comparison for 6 s (afloat on 2 s leases, so that
// the cut region's lease runs out while it is cut off) and checks what
// must hold whatever the machine's load: afloat and the naive split keep
// within R·Δ + B (the naive split's buckets start full, so it may touch
// the bound, by at most the 1-token resolution of the windows), the naive
// split's busy region never gets more than its third of R over the shift
// (plus its third of B), and the JSON has every series for the whole run.
func TestShortRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "peers.json")
	if err := run([]string{"--duration", "6s", "--lease", "2s", "--reps", "1", "--step", "200ms", "--max-rate", "600", "--out", out}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Systems) != 7 || len(res.Seconds) != 6 || len(res.Offered) != 6 {
		t.Fatalf("%d systems, %d seconds, %d offered; want 7, 6, 6", len(res.Systems), len(res.Seconds), len(res.Offered))
	}
	for _, s := range res.Systems {
		if len(s.PerSecond) != 6 || len(s.HotPerSecond) != 6 || len(s.Excess) != 6 || s.Latency.N == 0 {
			t.Errorf("%s: series %d %d %d, %d decisions", s.ID, len(s.PerSecond), len(s.HotPerSecond), len(s.Excess), s.Latency.N)
		}
		switch s.ID {
		case "afloat":
			if s.WorstWindow > 0 {
				t.Errorf("afloat: worst window %+.1f tokens over R·Δ + B", s.WorstWindow)
			}
		case "ratelimit_per_region":
			// Three fixed windows of R/3 a second: at most R in any
			// calendar second, 2R across a window's edge — far inside B.
			if s.WorstWindow > 0 {
				t.Errorf("ratelimit_per_region: worst window %+.1f tokens over R·Δ + B", s.WorstWindow)
			}
		case "naive":
			if s.WorstWindow > 1 {
				t.Errorf("naive: worst window %+.1f tokens over R·Δ + B", s.WorstWindow)
			}
			hot := 0.0
			for _, x := range s.HotPerSecond[2:] { // from the shift, at 1.5 s
				hot += x
			}
			if limit := 4.5*res.Tenant.Rate/3 + res.Tenant.Burst/3 + 1; hot > limit {
				t.Errorf("naive: the busy region admitted %.0f after the shift, above its third's %.0f", hot, limit)
			}
		}
	}
	if res.Throughput == nil || len(res.Throughput.Systems) != 5 {
		t.Fatalf("throughput: %+v, want 5 systems", res.Throughput)
	}
	for _, s := range res.Throughput.Systems {
		if len(s.Reps) != 1 || len(s.Reps[0].Steps) == 0 || s.Reps[0].Steps[0].Decisions == 0 {
			t.Errorf("throughput: %s: %+v, want one repetition with decisions", s.ID, s.Reps)
		}
	}
	if !strings.HasPrefix(res.Command, "cd bench/quotapeers && go run . --duration 6s") {
		t.Errorf("command %q", res.Command)
	}
	var printed strings.Builder
	if err := printFrom(&printed, out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ratelimit_per_region", "most decisions/s at p99", "p99 ≤ 50 ms", "afloat_rls"} {
		if !strings.Contains(printed.String(), want) {
			t.Errorf("--from printed no %q:\n%s", want, printed.String())
		}
	}
}

// TestFromRefused: --from names the file and what is wrong with it.
func TestFromRefused(t *testing.T) {
	dir := t.TempDir()
	bad, empty := filepath.Join(dir, "bad.json"), filepath.Join(dir, "empty.json")
	if err := errors.Join(os.WriteFile(bad, []byte("{"), 0o644), os.WriteFile(empty, []byte("{}"), 0o644)); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "none.json"), bad, empty} {
		if err := run([]string{"--from", path}); err == nil || !strings.Contains(err.Error(), "--from") {
			t.Errorf("--from %s: %v, want an error naming --from", path, err)
		}
	}
}

func TestFlagsRefused(t *testing.T) {
	for _, args := range [][]string{{"--duration", "1s"}, {"--duration", "3m"}, {"--lease", "1s"}, {"--lease", "13s"},
		{"--p99", "50µs"}, {"--p99", "1s"}, {"--step", "50ms"}, {"--step", "11s"}, {"--reps", "0"}, {"--reps", "6"}, {"--max-rate", "100"}, {"--max-rate", "2e6"}} {
		err := run(args)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: %v, want an error naming %s", args, err, args[0])
		}
	}
}

// TestFaultProxy: the proxy forwards, a cut drops the connection in use
// and holds new ones silent, and healing lets a new connection through.
func TestFaultProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // an echo server, a line at a time
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	p, err := newFaultProxy(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.shutdown()
	echo := func(c net.Conn) error {
		c.SetDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := c.Write([]byte("ping\n")); err != nil {
			return err
		}
		_, err := bufio.NewReader(c).ReadString('\n')
		return err
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", p.addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	live := dial()
	if err := echo(live); err != nil {
		t.Fatalf("before the cut: %v", err)
	}
	p.setCut(true)
	if err := echo(live); err == nil {
		t.Error("the connection in use still answers after the cut")
	}
	if err := echo(dial()); err == nil {
		t.Error("a new connection answers during the cut")
	}
	p.setCut(false)
	if err := echo(dial()); err != nil {
		t.Errorf("after healing: %v", err)
	}
}

// TestDelayProxy: bytes toward the target arrive no sooner than the delay.
func TestDelayProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	const delay = 40 * time.Millisecond
	p, err := newDelayProxy(ln.Addr().String(), delay)
	if err != nil {
		t.Fatal(err)
	}
	defer p.shutdown()
	c, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	for range 3 {
		t0 := time.Now()
		if _, err := c.Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 5)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping\n" {
			t.Fatalf("echo %q, %v", buf, err)
		}
		if rt := time.Since(t0); rt < delay {
			t.Errorf("round trip %v, under the delay %v", rt, delay)
		}
	}
}

// TestDue: the k-th request's scheduled time is where the schedule's
// arrivals reach k+1, before and after the shift.
func TestDue(t *testing.T) {
	sc := defaultSchedule(tenant{Rate: 500, Burst: 6000}, 8*time.Second)
	for r := range regionNames {
		for k := 0; ; k++ {
			at := sc.due(r, k)
			if at >= sc.Duration {
				if n := sc.arrivals(r, sc.Duration); k < n-1 {
					t.Errorf("region %d: schedule ends at request %d of %d", r, k, n)
				}
				break
			}
			if n := sc.arrivals(r, at+time.Microsecond); n < k+1 {
				t.Fatalf("region %d: request %d due at %v, arrivals there %d", r, k, at, n)
			}
			if n := sc.arrivals(r, at-time.Millisecond); n > k+1 {
				t.Fatalf("region %d: request %d due at %v, arrivals 1 ms before %d", r, k, at, n)
			}
		}
	}
}
