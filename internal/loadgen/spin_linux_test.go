package loadgen

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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
	if len(r.Sched) != n || len(r.Lat) != n || len(r.Lag) != n {
		t.Fatalf("%d, %d, %d measured, want %d each", len(r.Sched), len(r.Lat), len(r.Lag), n)
	}
	if r.Conns < 1 || r.Conns > conns {
		t.Errorf("%d connections, want 1–%d", r.Conns, conns)
	}
	if Pct(r.Sched, 0.5) < Pct(r.Lat, 0.5) || r.Sched[0] <= 0 {
		t.Errorf("from the schedule p50 %v, from the send %v", Pct(r.Sched, 0.5), Pct(r.Lat, 0.5))
	}
}
