package loadgen

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
)

// TestSpin: every request offered is answered and measured, latencies
// from the schedule are no shorter than from the send, and a server's
// refusal is an error.
func TestSpin(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck // the answer does not depend on it
		w.WriteHeader(int(status.Load()))
		io.WriteString(w, "ok") //nolint:errcheck // the client went away
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	wire := HTTP1([]byte("POST / HTTP/1.1\r\nHost: " + addr + "\r\nContent-Length: 2\r\n\r\n{}"))
	r, err := Spin(addr, wire, 4, 2000, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	measured(t, r, 400, 4)
	status.Store(http.StatusTooManyRequests)
	if _, err := Spin(addr, wire, 4, 1000, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "429") {
		t.Fatalf("a 429: err %v", err)
	}
	for _, bad := range []struct {
		addr  string
		conns int
		rate  float64
		d     time.Duration
	}{
		{"localhost:1", 1, 1, time.Millisecond}, {"10.0.0.1:80", 1, 1, time.Millisecond}, {"127.0.0.1:0", 1, 1, time.Millisecond},
		{addr, 0, 1, time.Millisecond}, {addr, 1, 0, time.Millisecond}, {addr, 1, 1, 0},
	} {
		if _, err := Spin(bad.addr, wire, bad.conns, bad.rate, bad.d); err == nil {
			t.Errorf("Spin(%q, conns %d, rate %v, %v): no error", bad.addr, bad.conns, bad.rate, bad.d)
		}
	}
}

// TestSpinGRPC drives a real gRPC server (grpc-go's health service): every
// call answered, the answer's message checked; a call the server fails
// (an unknown service: NOT_FOUND) is an error that says so.
func TestSpinGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(ln) //nolint:errcheck // stopped below
	defer srv.Stop()
	addr := ln.Addr().String()
	var checked atomic.Int64
	call := func(service string) Wire {
		msg, err := proto.Marshal(&healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatal(err)
		}
		return GRPC(addr, "/grpc.health.v1.Health/Check", msg, func(b []byte) error {
			var resp healthpb.HealthCheckResponse
			if err := proto.Unmarshal(b, &resp); err != nil {
				return err
			}
			if resp.Status != healthpb.HealthCheckResponse_SERVING {
				t.Errorf("status %v", resp.Status)
			}
			checked.Add(1)
			return nil
		})
	}
	r, err := Spin(addr, call(""), 4, 2000, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	measured(t, r, 400, 4)
	if checked.Load() != 400 {
		t.Errorf("%d answers checked, want 400", checked.Load())
	}
	if _, err := Spin(addr, call("nobody"), 1, 100, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), `grpc-status "5"`) {
		t.Fatalf("an unknown service: err %v, want grpc-status 5", err)
	}
}

func measured(t *testing.T, r Result, n, conns int) {
	t.Helper()
	if len(r.Sched) != n || len(r.Lat) != n || len(r.Lag) != n || len(r.Own) != n {
		t.Fatalf("%d, %d, %d, %d measured, want %d each", len(r.Sched), len(r.Lat), len(r.Lag), len(r.Own), n)
	}
	for _, p := range []float64{0.5, 0.99, 1} { // a request is sent no sooner than the loop sees it due
		if Pct(r.Own, p) > Pct(r.Lag, p) {
			t.Errorf("p%v: the generator's own lateness %v, over the sends' lag %v", p*100, Pct(r.Own, p), Pct(r.Lag, p))
		}
	}
	if r.Conns < 1 || r.Conns > conns {
		t.Errorf("%d connections, want 1–%d", r.Conns, conns)
	}
	if Pct(r.Sched, 0.5) < Pct(r.Lat, 0.5) || r.Sched[0] <= 0 {
		t.Errorf("from the schedule p50 %v, from the send %v", Pct(r.Sched, 0.5), Pct(r.Lat, 0.5))
	}
	if Steal() != nil && (len(r.Steal) == 0 || slices.ContainsFunc(r.Steal, func(d time.Duration) bool { return d < 0 })) {
		t.Errorf("steal %v over the run, want one figure ≥ 0 a CPU", r.Steal)
	}
}

// TestParseSteal reads the steal column CPU by CPU and refuses what it
// does not understand rather than answer a wrong figure.
func TestParseSteal(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		name, stat string
		want       []time.Duration
	}{
		{"two CPUs", "cpu  50478 0 43897 90261 727 0 9122 4279 0 0\ncpu0 25302 0 12096 54094 149 0 1665 3317 0 0\ncpu1 25176 0 31800 36166 578 0 7456 962 0 0\nintr 7412867 0 0\nctxt 1\n",
			[]time.Duration{33170 * ms, 9620 * ms}},
		{"an offline CPU between", "cpu0 1 2 3 4 5 6 7 8\ncpu2 1 2 3 4 5 6 7 9\n", []time.Duration{80 * ms, 0, 90 * ms}},
		{"no CPU lines", "intr 1\n", nil},
		{"no steal column (before 2.6.11)", "cpu0 1 2 3 4 5 6 7\n", nil},
		{"not a number", "cpu0 1 2 3 4 5 6 7 x\n", nil},
		{"negative", "cpu0 1 2 3 4 5 6 7 -8\n", nil},
		{"an absurd CPU", "cpu99999999 1 2 3 4 5 6 7 8\n", nil},
		{"a CPU without a number", "cpux 1 2 3 4 5 6 7 8\n", nil},
	} {
		if got := parseSteal(c.stat); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// FuzzParseSteal: any file is answered without a panic, with at most one
// figure ≥ 0 for each CPU number below 65,536.
func FuzzParseSteal(f *testing.F) {
	f.Add("cpu  50478 0 43897 90261 727 0 9122 4279 0 0\ncpu0 25302 0 12096 54094 149 0 1665 3317 0 0\ncpu1 25176 0 31800 36166 578 0 7456 962 0 0\n")
	f.Add("cpu0 1 2 3 4 5 6 7\n")
	f.Add("cpu3 1 2 3 4 5 6 7 68719476735\n")
	f.Add("cpu3 1 2 3 4 5 6 7 68719476736\n")
	f.Fuzz(func(t *testing.T, stat string) {
		got := parseSteal(stat)
		if len(got) > 1<<16 || slices.ContainsFunc(got, func(d time.Duration) bool { return d < 0 }) {
			t.Fatalf("%d figures, %v", len(got), got[:min(len(got), 8)])
		}
	})
}
