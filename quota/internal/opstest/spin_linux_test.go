package opstest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
	req := []byte("POST / HTTP/1.1\r\nHost: " + addr + "\r\nContent-Length: 2\r\n\r\n{}")
	l, err := Spin(addr, req, HTTPWhole, 4, 2000, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Sched) != 400 || len(l.Lat) != 400 || len(l.Lag) != 400 {
		t.Fatalf("%d, %d, %d measured, want 400 each", len(l.Sched), len(l.Lat), len(l.Lag))
	}
	if l.Conns < 1 || l.Conns > 4 {
		t.Errorf("%d connections, want 1–4", l.Conns)
	}
	if Pct(l.Sched, 0.5) < Pct(l.Lat, 0.5) || l.Sched[0] <= 0 {
		t.Errorf("from the schedule p50 %v, from the send %v", Pct(l.Sched, 0.5), Pct(l.Lat, 0.5))
	}
	status.Store(http.StatusTooManyRequests)
	if _, err := Spin(addr, req, HTTPWhole, 4, 1000, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "429") {
		t.Fatalf("a 429: err %v", err)
	}
	for _, bad := range []struct {
		addr  string
		conns int
		rate  float64
	}{{"localhost:1", 1, 1}, {"10.0.0.1:80", 1, 1}, {addr, 0, 1}, {addr, 1, 0}, {"127.0.0.1:0", 1, 1}} {
		if _, err := Spin(bad.addr, req, HTTPWhole, bad.conns, bad.rate, time.Millisecond); err == nil {
			t.Errorf("Spin(%q, conns %d, rate %v): no error", bad.addr, bad.conns, bad.rate)
		}
	}
}
