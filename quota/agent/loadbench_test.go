package agent_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
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
//
// The floor, measured in the same run by the same generator: a bare
// net/http server in a process of its own (TestBenchAgentProcess with
// AFLOAT_QUOTA_BENCH_FLOOR=1) that reads the same request and writes an
// answer of the same size and headers, deciding nothing — what loopback
// HTTP costs on the machine. Floor and agent alternate, 10 s each, twice.
// AFLOAT_AGENT_CPUPROFILE=FILE writes the agent's CPU profile.
func TestBenchDecisionAPI(t *testing.T) {
	opstest.BenchOnly(t)
	agentAddr := benchChild(t, "AFLOAT_QUOTA_BENCH_AGENT=1", os.Getenv("AFLOAT_AGENT_CPUPROFILE"))
	floorAddr := benchChild(t, "AFLOAT_QUOTA_BENCH_FLOOR=1", "")
	const rate = 10_000
	for round := range 2 {
		for _, s := range []struct{ name, addr string }{{"floor (bare net/http)", floorAddr}, {"decision API", agentAddr}} {
			call := leanCaller(t, s.addr)
			if round == 0 {
				opstest.OpenLoop(2000, time.Second, 64, call) // warm: connections, a lease
			}
			l := opstest.OpenLoop(rate, 10*time.Second, 64, call)
			fmt.Printf("%s: %d checks in %v = %.0f/s (offered %d/s), %d failed; latency from the schedule p50 %v p99 %v p99.9 %v max %v; from the send p50 %v p99 %v; sends behind schedule p99 %v; load %s\n",
				s.name, len(l.Sched), l.Elapsed.Round(time.Millisecond), float64(len(l.Sched))/l.Elapsed.Seconds(), rate, l.Failed,
				opstest.Pct(l.Sched, 0.5), opstest.Pct(l.Sched, 0.99), opstest.Pct(l.Sched, 0.999), opstest.Pct(l.Sched, 1),
				opstest.Pct(l.Lat, 0.5), opstest.Pct(l.Lat, 0.99), opstest.Pct(l.Lag, 0.99), loadavg())
		}
	}
}

// benchChild starts this test binary as TestBenchAgentProcess with env
// set (and GOGC=400, what afloat quota region runs the agent with) and
// returns the address it serves; the process ends with the test.
func benchChild(t *testing.T, env, cpuprofile string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^TestBenchAgentProcess$")
	if cpuprofile != "" {
		cmd.Args = append(cmd.Args, "-test.cpuprofile", cpuprofile)
	}
	cmd.Env = append(os.Environ(), env, "GOGC=400")
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
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "agent "); ok {
			go io.Copy(io.Discard, out)
			return a
		}
	}
	t.Fatal("the agent process printed no address")
	return ""
}

// leanCaller is a lean client, as wrk is: 128 keep-alive connections,
// each call takes one, writes one prepared request and reads the answer;
// no allocation per call, so that the generator's own garbage collection
// does not add to the latencies it measures.
func leanCaller(t *testing.T, addr string) func(int) error {
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
		t.Cleanup(func() { c.Close() })
		conns <- &conn{c: c, r: bufio.NewReaderSize(c, 4096), buf: make([]byte, 4096)}
	}
	return func(int) error {
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
}

// TestBenchAgentProcess is the agent of TestBenchDecisionAPI, in its own
// process, renewing through a coordinator in memory beside it, without an
// event log — or, with AFLOAT_QUOTA_BENCH_FLOOR, the floor: a bare
// net/http server answering every POST /v1/allow with a fixed answer of
// the agent's size and headers. It prints "agent ADDR" and serves until
// its standard input closes.
func TestBenchAgentProcess(t *testing.T) {
	if os.Getenv("AFLOAT_QUOTA_BENCH_FLOOR") != "" {
		floorProcess(t)
		return
	}
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

// floorProcess serves TestBenchDecisionAPI's floor.
func floorProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	answer := []byte(`{"allowed":false,"remaining":0.4,"retry_after":0.002,"retry_known":true,"never":false}` + "\n")
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/allow", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck // the floor decides nothing
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		w.Write(answer) //nolint:errcheck // the client went away
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // closed below
	defer srv.Close()
	fmt.Printf("agent %s\n", ln.Addr())
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
