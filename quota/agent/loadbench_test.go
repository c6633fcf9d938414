package agent_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/agent"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/servicetest"
)

// TestBenchDecisionAPI: a region agent's POST /v1/allow at 10,000 checks a
// second over loopback HTTP for 10 s, on keep-alive connections. The
// agent (and an in-process coordinator that leases to it) runs in a
// process of its own — this test binary again, as TestBenchAgentProcess,
// with GOGC=400 as afloat quota region sets it — so that the load
// generator's garbage collection and goroutines do not stop the agent's.
// Latency runs from each check's scheduled time to its answer (what a
// caller waits); target: p99 ≤ 1 ms on a quiet machine.
func TestBenchDecisionAPI(t *testing.T) {
	opstest.BenchOnly(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^TestBenchAgentProcess$")
	// GOGC=400: what afloat quota region runs the agent with.
	cmd.Env = append(os.Environ(), "AFLOAT_QUOTA_BENCH_AGENT=1", "GOGC=400")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	sc := bufio.NewScanner(out)
	var addr string
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "agent "); ok {
			addr = a
			break
		}
	}
	if addr == "" {
		t.Fatal("the agent process printed no address")
	}
	go io.Copy(io.Discard, out)
	// A lean client, as wrk is: each worker owns a keep-alive connection,
	// writes one prepared request and reads the answer; no allocation per
	// call, so that the generator's own garbage collection does not add to
	// the latencies it measures.
	body := `{"tenant":"acme","endpoint":"/","n":1}`
	req := []byte("POST /v1/allow HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	type conn struct {
		c   net.Conn
		r   *bufio.Reader
		buf []byte
	}
	conns := make(chan *conn, 128)
	for range 128 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns <- &conn{c: c, r: bufio.NewReaderSize(c, 4096), buf: make([]byte, 4096)}
	}
	call := func(int) error {
		k := <-conns
		defer func() { conns <- k }()
		if _, err := k.c.Write(req); err != nil {
			return err
		}
		status, err := k.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if !bytes.HasPrefix(status, []byte("HTTP/1.1 200")) {
			return fmt.Errorf("status %q", status)
		}
		n := -1
		for {
			line, err := k.r.ReadSlice('\n')
			if err != nil {
				return err
			}
			if len(line) <= 2 {
				break
			}
			if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
				n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
			}
		}
		if n < 0 || n > len(k.buf) {
			return fmt.Errorf("content length %d", n)
		}
		_, err = io.ReadFull(k.r, k.buf[:n])
		return err
	}
	opstest.OpenLoop(2000, time.Second, 64, call) // warm: connections, a lease
	const rate = 10_000
	l := opstest.OpenLoop(rate, 10*time.Second, 64, call)
	fmt.Printf("decision API: %d checks in %v = %.0f/s (offered %d/s), %d failed; latency from the schedule p50 %v p99 %v p99.9 %v max %v; from the send p50 %v p99 %v; sends behind schedule p99 %v; load %s\n",
		len(l.Sched), l.Elapsed.Round(time.Millisecond), float64(len(l.Sched))/l.Elapsed.Seconds(), rate, l.Failed,
		opstest.Pct(l.Sched, 0.5), opstest.Pct(l.Sched, 0.99), opstest.Pct(l.Sched, 0.999), opstest.Pct(l.Sched, 1),
		opstest.Pct(l.Lat, 0.5), opstest.Pct(l.Lat, 0.99), opstest.Pct(l.Lag, 0.99), loadavg())
}

// TestBenchAgentProcess is the agent of TestBenchDecisionAPI, in its own
// process, renewing through a coordinator in memory beside it, without an
// event log: it prints "agent ADDR" and serves until its standard input
// closes.
func TestBenchAgentProcess(t *testing.T) {
	if os.Getenv("AFLOAT_QUOTA_BENCH_AGENT") == "" {
		t.Skip("the agent process of TestBenchDecisionAPI")
	}
	c := servicetest.New(t, opstest.ConfigFile("good.yaml"))
	c.NoEventLogs = true
	c.MemoryCoordinator()
	eu := c.Agent(agent.Options{Name: "eu"}, nil)
	fmt.Printf("agent %s\n", eu.Addr)
	io.Copy(io.Discard, os.Stdin) // until the parent closes it
}

// loadavg is the machine's load average (1, 5, 15 minutes), printed
// beside the numbers it colours.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
