package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/afloat/afloat/assign"
	"github.com/afloat/afloat/assign/assigntest"
	"github.com/afloat/afloat/internal/redisurl"
)

// The review attacked `afloat serve` from outside, as a web page its user
// visits can, and each attack below once worked. TestServeUnderAbuse
// repeats them against the real binary in a process of its own (built
// without the race detector, so that its memory is what a user sees) and
// reads its memory from /proc. AFLOAT_TEST_BINARY=path runs them against
// another build (testBinary) — the way to see them fail on an older afloat.

// consoleProcess is `afloat serve` in a child process.
type consoleProcess struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
}

// startConsoleProcess runs `afloat serve --addr 127.0.0.1:0 args...` and
// waits for the address it logs.
func startConsoleProcess(t *testing.T, bin string, args ...string) *consoleProcess {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	cmd.Env = append(os.Environ(), "AFLOAT_REDIS_URL=")
	pr, pw := io.Pipe()
	logs := &syncBuffer{}
	cmd.Stderr = io.MultiWriter(pw, logs)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &consoleProcess{cmd: cmd, stderr: logs}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		pw.Close()
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var line struct{ Msg, URL string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "console listening" {
				found <- strings.TrimSuffix(line.URL, "/")
				break
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case p.url = <-found:
	case <-time.After(30 * time.Second):
		t.Fatalf("the console did not say where it listens: %s", logs)
	}
	return p
}

// rss returns the process's resident memory now and at its peak, in MiB.
func (p *consoleProcess) rss(t *testing.T) (now, peak float64) {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("reading the console's memory: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[2] == "kB" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			switch f[0] {
			case "VmRSS:":
				now = kb / 1024
			case "VmHWM:":
				peak = kb / 1024
			}
		}
	}
	return now, peak
}

// watchMemory kills the console as soon as it passes limit MiB, so that a
// build that leaks (an older afloat took 6.6 GB) cannot take the machine
// down with it; stop returns the peak seen.
func (p *consoleProcess) watchMemory(t *testing.T, limit float64) (stop func() float64) {
	done := make(chan struct{})
	var peak float64
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			_, hwm := p.rss(t)
			peak = max(peak, hwm)
			if hwm > limit {
				p.cmd.Process.Kill()
				return
			}
		}
	})
	return func() float64 {
		close(done)
		wg.Wait()
		return peak
	}
}

func TestServeUnderAbuse(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the console's memory from /proc")
	}
	if testing.Short() {
		t.Skip("builds and abuses the binary: about 30 s")
	}
	bin := testBinary(t, "")
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(ctx context.Context, url, body string, headers map[string]string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			if v == "" {
				req.Header.Del(k)
			} else {
				req.Header.Set(k, v)
			}
		}
		return client.Do(req)
	}

	t.Run("abandoned comparisons", func(t *testing.T) {
		// 50 comparisons of new seeds, each abandoned after 0.2 s: once each
		// went on for seconds and ~320 MB; 20 took the server to 6.6 GB.
		// Sent both ways, GET as the attack was and POST as the API is now.
		const limit = 400 // MiB
		p := startConsoleProcess(t, bin)
		stop := p.watchMemory(t, limit)
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				u := fmt.Sprintf("%s/api/overload/compare?profile=worldcup&seed=%d", p.url, 2000+i)
				if i%2 == 0 {
					req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
					if res, err := client.Do(req); err == nil {
						res.Body.Close()
					}
				} else if res, err := post(ctx, p.url+"/api/overload/compare", fmt.Sprintf(`{"profile": "worldcup", "seed": %d}`, 2000+i), nil); err == nil {
					res.Body.Close()
				}
			})
		}
		wg.Wait()
		// A normal request while whatever was started winds down.
		start := time.Now()
		res, err := client.Get(p.url + "/api/run?scenario=steady&to=1")
		took := time.Since(start)
		if err != nil {
			t.Fatalf("a normal request after the abandoned ones: %v (the console was killed at %d MiB?)", err, limit)
		}
		res.Body.Close()
		if res.StatusCode != 200 || took >= time.Second {
			t.Errorf("a normal request after the abandoned ones: %d in %v, want 200 in under 1 s", res.StatusCode, took)
		}
		time.Sleep(6 * time.Second) // past the grace period: nothing may be left running
		peak := stop()
		t.Logf("abandoned comparisons: peak RSS %.0f MiB; a normal request answered in %v", peak, took)
		if peak > limit {
			t.Errorf("peak RSS %.0f MiB, want under %d MiB", peak, limit)
		}
	})

	t.Run("concurrent 1 MiB debriefs", func(t *testing.T) {
		// 96 debriefs of about 1 MiB each at once took the server to 1.3 GB
		// and 13.6 s median answers.
		const limit = 500 // MiB
		p := startConsoleProcess(t, bin)
		var b strings.Builder
		b.WriteString(`{"scenario": "surge", "seed": 3, "actions": [`)
		for i := 0; b.Len() < 1<<20-200; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"minute": %d, "control": "cache_ttl_s", "value": %d}`, i%239, 30+i%60)
		}
		b.WriteString("]}")
		body := b.String()
		stop := p.watchMemory(t, limit)
		var mu sync.Mutex
		statuses := map[int]int{}
		var wg sync.WaitGroup
		for range 96 {
			wg.Go(func() {
				res, err := post(context.Background(), p.url+"/api/debrief", body, nil)
				code := 0
				if err == nil {
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					code = res.StatusCode
					if code == 503 && res.Header.Get("Retry-After") == "" {
						code = -503
					}
				}
				mu.Lock()
				statuses[code]++
				mu.Unlock()
			})
		}
		wg.Wait()
		peak := stop()
		t.Logf("96 debriefs of %d bytes: statuses %v, peak RSS %.0f MiB", len(body), statuses, peak)
		if statuses[200]+statuses[503] != 96 {
			t.Errorf("statuses %v: want each answered 200 or refused 503 with Retry-After", statuses)
		}
		if peak > limit {
			t.Errorf("peak RSS %.0f MiB, want under %d MiB", peak, limit)
		}
	})

	t.Run("cross-site writes and passwords", func(t *testing.T) {
		const secret = "p@SECRET-7c1"
		redis := assigntest.Start(t, "--requirepass", secret)
		url := "redis://:" + secret + "@" + redis.Addr
		p := startConsoleProcess(t, bin, "--redis", url, "--assign-pool", "lab")
		res, err := client.Get(p.url + "/api/assign") // reads only
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("GET /api/assign: %d", res.StatusCode)
		}
		res, err = post(context.Background(), p.url+"/api/assign/create", `{}`, nil) // the lab creates its pool
		if err != nil {
			t.Fatal(err)
		}
		state, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("POST /api/assign/create: %d %s", res.StatusCode, state)
		}
		if r, err := post(context.Background(), p.url+"/api/assign/pick", `{"n": 20}`, nil); err != nil || r.StatusCode != 200 {
			t.Fatalf("a pick from the console's own client: %v %v", r, err)
		}
		rc, err := redisurl.Dial(url, assign.ErrInvalid)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		c, _ := assign.FromRueidis(rc)
		pool, _ := assign.New(c, "lab")
		list := func() string {
			st, err := pool.Status(assigntest.Context(t, 5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(st.Members)
		}
		before := list()
		for i, at := range []map[string]string{
			{"Origin": "https://evil.example"},
			{"Sec-Fetch-Site": "cross-site"},
			{"Content-Type": ""},
			{"Content-Type": "text/plain"},
		} {
			for _, rt := range []struct{ route, body string }{
				{"create", `{"members": 2}`}, {"reset", `{"members": 2}`}, {"load", `{"rate": 5000}`}, {"pick", `{"n": 1000}`}, {"remove", `{"member": "proxy-01"}`},
			} {
				route := rt.route
				res, err := post(context.Background(), p.url+"/api/assign/"+route, rt.body, at)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != 403 {
					t.Errorf("step %d: cross-site POST /api/assign/%s with %v: %d, want 403", i, route, at, res.StatusCode)
				}
			}
		}
		if res, err := post(context.Background(), p.url+"/api/overload/live", `{}`, map[string]string{"Origin": "https://evil.example"}); err != nil || res.StatusCode != 403 {
			t.Errorf("cross-site POST /api/overload/live: %v %v, want 403", res, err)
		}
		time.Sleep(300 * time.Millisecond) // a load, had one started, would have picked by now
		if after := list(); after != before {
			t.Errorf("cross-site requests changed the pool:\nbefore %s\nafter  %s", before, after)
		}
		for _, part := range []string{"SECRET", "7c1"} {
			if strings.Contains(string(state), part) || strings.Contains(p.stderr.String(), part) {
				t.Errorf("%q shows in the page's state %s or the logs %s", part, state, p.stderr)
			}
		}
		// Strict decoding: seed=%zz ran seed 0.
		res, err = client.Get(p.url + "/api/run?scenario=steady&seed=%zz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 400 {
			t.Errorf("seed=%%zz: %d, want 400", res.StatusCode)
		}
	})
}
