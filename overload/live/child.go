package live

import (
	"bytes"
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
	"time"
)

// child is a running server process, seen from the load generator.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	url   string
}

// startChild starts the server process on one core and waits for its
// address.
func startChild(ctx context.Context, exe string, work time.Duration) (*child, error) {
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("live: finding this binary for the server: %w", err)
		}
	}
	name, args := exe, []string{}
	if ts, err := exec.LookPath("taskset"); err == nil && runtime.NumCPU() > 1 {
		name, args = ts, []string{"-c", "0", exe} // the server on core 0, the load wherever else
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), ServerEnv+"="+work.String(), "GOMAXPROCS=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("live: starting the server process: %w", err)
	}
	line := make([]byte, 0, 64)
	buf := make([]byte, 1)
	for len(line) < 200 {
		if _, err := stdout.Read(buf); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("live: the server process did not give its address: %w", err)
		}
		if buf[0] == '\n' {
			break
		}
		line = append(line, buf[0])
	}
	go io.Copy(io.Discard, stdout)
	return &child{cmd: cmd, stdin: stdin, url: string(line)}, nil
}

// pinSelf keeps this process — the load generator — off the server's core
// 0 while a comparison runs, with taskset where there is one, and returns
// the function that gives it back all of its cores.
func pinSelf() func() {
	ts, err := exec.LookPath("taskset")
	if err != nil || runtime.NumCPU() < 2 {
		return func() {}
	}
	pid := strconv.Itoa(os.Getpid())
	was, err := exec.Command(ts, "-p", pid).Output()
	if err != nil {
		return func() {}
	}
	// "pid 123's current affinity mask: 3"
	mask := strings.TrimSpace(string(was[bytes.LastIndexByte(was, ' ')+1:]))
	others := fmt.Sprintf("1-%d", runtime.NumCPU()-1)
	if exec.Command(ts, "-a", "-cp", others, pid).Run() != nil {
		return func() {}
	}
	return func() { exec.Command(ts, "-a", "-p", mask, pid).Run() }
}

func (c *child) stop() {
	c.stdin.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}

// post sends a POST with no body to the server and fails on anything but
// 200, decoding the answer into v if it is not nil.
func (c *child) post(ctx context.Context, client *http.Client, path, what string, v any) error {
	req, _ := http.NewRequestWithContext(ctx, "POST", c.url+path, nil)
	res, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("live: %s: %w", what, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(res.Body)
		return fmt.Errorf("live: %s: %s", what, msg)
	}
	if v != nil {
		if err := json.NewDecoder(res.Body).Decode(v); err != nil {
			return fmt.Errorf("live: %s: %w", what, err)
		}
	}
	return nil
}

// setMode switches the server's protection; the server first drops the
// backlog the last mode left and waits until it is idle.
func (c *child) setMode(ctx context.Context, client *http.Client, mode string, p50 time.Duration) error {
	return c.post(ctx, client, fmt.Sprintf("/mode?name=%s&p50=%d", mode, p50), "switching the server to "+mode, nil)
}

// calibrate fits the server's handler to work on its core, then measures
// the no-load latency, one request at a time, and the capacity, with a
// closed loop of four clients.
func (c *child) calibrate(ctx context.Context, client *http.Client, work time.Duration) (Calibration, error) {
	if err := c.setMode(ctx, client, "none", work); err != nil {
		return Calibration{}, err
	}
	var cal Calibration
	if err := c.post(ctx, client, fmt.Sprintf("/calibrate?work=%d", work), "calibrating the server", &cal); err != nil {
		return Calibration{}, err
	}
	noLoad(ctx, client, c.url+"/none", 20) // warm the connection and the caches
	cal.NoLoadP50, cal.NoLoadP99 = noLoad(ctx, client, c.url+"/none", max(50, min(300, int(time.Second/work))))
	cal.Capacity = capacity(ctx, client, c.url+"/none", 4, max(2*time.Second, 200*work)) // long enough that goodput cannot pass it by chance
	return cal, ctx.Err()
}

// cpuSamples fetches the server's CPU samples since its mode was set.
func (c *child) cpuSamples(ctx context.Context, client *http.Client) ([]cpuSample, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", c.url+"/cpu", nil)
	res, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("live: reading the server's CPU time: %w", err)
	}
	defer res.Body.Close()
	var s []cpuSample
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
		return nil, fmt.Errorf("live: reading the server's CPU time: %w", err)
	}
	return s, nil
}
