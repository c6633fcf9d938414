package live

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	fsbulkhead "github.com/failsafe-go/failsafe-go/bulkhead"

	"github.com/afloat/afloat/bulkhead"
)

// ErrConfig is returned for a comparison or a soak that cannot be made.
var ErrConfig = errors.New("live: invalid configuration")

// Phase is a stretch of constant load, as a multiple of capacity.
type Phase struct {
	Name     string
	Load     float64
	Duration time.Duration
}

// Config configures a live comparison. The zero value takes the
// defaults on each field.
type Config struct {
	Work     time.Duration // CPU time of one request on an idle core; default 10 ms
	Deadline time.Duration // clients give up after this; default 100 ms
	Phases   []Phase       // default DefaultPhases
	Modes    []string      // default Modes
	// Executable is the binary to start as the server; default this one.
	// It must call ServeIfChild first thing (cmd/afloat does, and so do
	// this package's tests).
	Executable string
	// Progress, if set, is told what runs.
	Progress func(string)
}

// Bounds of a live comparison and of a soak, for callers that check their
// input before they start one.
const (
	MinWork     = 100 * time.Microsecond // Config.Work
	MaxWork     = time.Second
	MaxDeadline = time.Minute // Config.Deadline, from Work
	MaxLoad     = 100         // × capacity, a phase's or a soak's
	// A soak samples the server every interval, from MinSoakEvery to
	// MaxSoakEvery, and lasts from SoakIntervals intervals to MaxSoak. Flat
	// compares the last sample under load with the median of those under
	// load: that takes three, taken at one, two and three intervals, so a
	// soak lasts at least four.
	MinSoakEvery  = time.Second
	MaxSoakEvery  = time.Hour
	SoakIntervals = 4
	MaxSoak       = 24 * time.Hour
)

// Modes are the protections compared.
var Modes = []string{"none", "afloat-fixed", "afloat-adaptive", "failsafe-go"}

// DefaultPhases is the load of a comparison: half of capacity, all of it,
// three times it, half, ten times it, half. Recovery is measured in the
// calm phases after the overloads.
var DefaultPhases = []Phase{
	{"0.5x", 0.5, 3 * time.Second},
	{"1x", 1, 4 * time.Second},
	{"3x", 3, 5 * time.Second},
	{"after 3x", 0.5, 4 * time.Second},
	{"10x", 10, 5 * time.Second},
	{"after 10x", 0.5, 4 * time.Second},
}

// ShortPhases is a quicker comparison, for the console.
var ShortPhases = []Phase{
	{"0.5x", 0.5, 2 * time.Second},
	{"1x", 1, 2 * time.Second},
	{"3x", 3, 3 * time.Second},
	{"after 3x", 0.5, 2 * time.Second},
	{"10x", 10, 3 * time.Second},
	{"after 10x", 0.5, 2 * time.Second},
}

// PhaseReport is what one phase of one mode saw. Goodput is responses
// within the deadline per second ÷ capacity.
type PhaseReport struct {
	Name     string        `json:"name"`
	Load     float64       `json:"load"`
	Sent     int           `json:"sent"`
	Good     int           `json:"good"`     // 200 within the deadline
	Rejected int           `json:"rejected"` // 503
	Timeouts int           `json:"timeouts"` // no answer within the deadline
	Goodput  float64       `json:"goodput"`
	P50      time.Duration `json:"p50_ns"` // of the requests admitted and answered
	P99      time.Duration `json:"p99_ns"`
}

// ModeReport is one protection's run of every phase.
type ModeReport struct {
	Mode   string        `json:"mode"`
	Phases []PhaseReport `json:"phases"`
	// Recovery is, for each overload phase, how long after it ended the
	// server was back to normal: a second in a row of answers within twice
	// the no-load p99 and no give-ups. −1 ns: not within the next phase.
	Recovery map[string]time.Duration `json:"recovery_ns"`
}

// Report is a whole comparison.
type Report struct {
	Cores     int           `json:"cores"`
	Work      time.Duration `json:"work_ns"`
	Deadline  time.Duration `json:"deadline_ns"`
	Capacity  float64       `json:"capacity"` // requests per second, measured
	NoLoadP50 time.Duration `json:"no_load_p50_ns"`
	NoLoadP99 time.Duration `json:"no_load_p99_ns"`
	Modes     []ModeReport  `json:"modes"`
}

// burner does a fixed amount of CPU work: a number of SHA-256 rounds
// calibrated to take Work on an idle core. Fixed work, not a wall-clock
// loop, so that contention makes requests slower as it does in a real
// server. It yields every ~100 µs, as a handler that makes calls does:
// without that, requests running on every core keep the new ones waiting
// in Go's run queue, where no bulkhead can see them. When abort is set,
// work stops early: between modes the backlog an unprotected server built
// up is dropped, as restarting it would.
type burner struct {
	rounds int
	abort  *atomic.Bool
}

var sink atomic.Uint64

func (b burner) burn() {
	var h [32]byte
	for i := range b.rounds {
		if i%1024 == 1023 {
			if b.abort != nil && b.abort.Load() {
				return
			}
			runtime.Gosched()
		}
		h = sha256.Sum256(h[:])
	}
	sink.Add(uint64(h[0]))
}

func calibrate(work time.Duration) burner {
	b := burner{rounds: 1000, abort: new(atomic.Bool)}
	for {
		start := time.Now()
		b.burn()
		took := time.Since(start)
		if took > 20*time.Millisecond {
			b.rounds = int(float64(b.rounds) * float64(work) / float64(took))
			return b
		}
		b.rounds *= 2
	}
}

// deadlineHeader carries the client's remaining time to the server, so
// that a bulkhead can refuse a request it cannot serve in time.
const deadlineHeader = "X-Deadline-Ms"

// ServerEnv, set in a process's environment, makes ServeIfChild
// turn that process into the server of a live comparison. Its value is the
// work of one request, as a duration ("5ms").
const ServerEnv = "AFLOAT_LIVE_SERVER"

// ServeIfChild serves a live comparison and exits if this process was
// started as its server (ServerEnv set); otherwise it returns at once.
// Call it first thing in main, and in TestMain of tests that run Run.
func ServeIfChild() {
	work, ok := os.LookupEnv(ServerEnv)
	if !ok {
		return
	}
	d, err := time.ParseDuration(work)
	if err != nil || d <= 0 {
		fmt.Fprintf(os.Stderr, "live: %s=%q: want a duration such as 5ms\n", ServerEnv, work)
		os.Exit(2)
	}
	srv, url, err := serve(calibrate(d))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%s\n", url)
	// The parent holds stdin open for as long as it needs the server.
	io.Copy(io.Discard, os.Stdin)
	srv.Close()
	os.Exit(0)
}

// child is a running server process.
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

// setMode switches the server's protection; the server first drops the
// backlog the last mode left and waits until it is idle.
func (c *child) setMode(ctx context.Context, client *http.Client, mode string, p50 time.Duration) error {
	u := fmt.Sprintf("%s/mode?name=%s&p50=%d", c.url, mode, p50)
	req, _ := http.NewRequestWithContext(ctx, "POST", u, nil)
	res, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("live: switching the server to %s: %w", mode, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(res.Body)
		return fmt.Errorf("live: switching the server to %s: %s", mode, msg)
	}
	return nil
}

// Run runs a live comparison. It starts the server process on a free
// loopback port and stops it before it returns; it takes as long as the
// phases take, per mode, plus a few seconds to measure the capacity.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.Work == 0 {
		cfg.Work = 10 * time.Millisecond
	}
	if cfg.Deadline == 0 {
		cfg.Deadline = 100 * time.Millisecond
	}
	if cfg.Phases == nil {
		cfg.Phases = DefaultPhases
	}
	if cfg.Modes == nil {
		cfg.Modes = Modes
	}
	if cfg.Progress == nil {
		cfg.Progress = func(string) {}
	}
	switch {
	case cfg.Work < MinWork || cfg.Work > MaxWork:
		return Report{}, fmt.Errorf("%w: work %v: want %v to %v", ErrConfig, cfg.Work, MinWork, MaxWork)
	case cfg.Deadline < cfg.Work || cfg.Deadline > MaxDeadline:
		return Report{}, fmt.Errorf("%w: deadline %v: want the work (%v) to 1m", ErrConfig, cfg.Deadline, cfg.Work)
	case len(cfg.Phases) == 0:
		return Report{}, fmt.Errorf("%w: no phases", ErrConfig)
	}
	for _, p := range cfg.Phases {
		if !(p.Load > 0 && p.Load <= MaxLoad) || p.Duration <= 0 || p.Duration > time.Hour {
			return Report{}, fmt.Errorf("%w: phase %q: load %v × capacity for %v: want a load above 0 and at most 100, and up to an hour", ErrConfig, p.Name, p.Load, p.Duration)
		}
	}
	for _, m := range cfg.Modes {
		if !slices.Contains(Modes, m) {
			return Report{}, fmt.Errorf("%w: mode %q: want some of %v", ErrConfig, m, Modes)
		}
	}

	srv, err := startChild(ctx, cfg.Executable, cfg.Work)
	if err != nil {
		return Report{}, err
	}
	defer srv.stop()
	defer pinSelf()()
	client := newLoadClient()
	defer client.CloseIdleConnections()
	rep := Report{Cores: 1, Work: cfg.Work, Deadline: cfg.Deadline}

	cfg.Progress("measuring the server's capacity")
	rep.NoLoadP50, rep.NoLoadP99 = noLoad(ctx, client, srv.url+"/none", 300)
	rep.Capacity = capacity(ctx, client, srv.url+"/none", 4, 2*time.Second)
	if ctx.Err() != nil {
		return Report{}, ctx.Err()
	}
	for _, mode := range cfg.Modes {
		cfg.Progress("running " + mode)
		if err := srv.setMode(ctx, client, mode, rep.NoLoadP50); err != nil {
			return Report{}, err
		}
		mr := runPhases(ctx, client, srv.url+"/work", rep, cfg)
		mr.Mode = mode
		rep.Modes = append(rep.Modes, mr)
		if ctx.Err() != nil {
			return Report{}, ctx.Err()
		}
	}
	srv.setMode(ctx, client, "none", rep.NoLoadP50) // drop the last backlog before stopping
	return rep, nil
}

func newLoadClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: 20000, MaxIdleConnsPerHost: 20000, IdleConnTimeout: 30 * time.Second,
	}}
}

// liveServer is the server under test; its protection is swapped between
// modes.
type liveServer struct {
	http     *http.Server
	ln       net.Listener
	protect  atomic.Pointer[func(http.Handler) http.Handler]
	b        burner
	inflight atomic.Int64 // requests in the handler
}

// idle waits until no request is in the handler (at most 10 s).
func (s *liveServer) idle() {
	for deadline := time.Now().Add(10 * time.Second); s.inflight.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *liveServer) Close() { s.http.Close() }

func serve(b burner) (*liveServer, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("live: listen: %w", err)
	}
	s := &liveServer{ln: ln, b: b}
	none := func(h http.Handler) http.Handler { return h }
	s.protect.Store(&none)
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.b.burn()
		w.WriteHeader(http.StatusOK)
	})
	mux := http.NewServeMux()
	mux.Handle("/none", work)
	mux.HandleFunc("/work", func(w http.ResponseWriter, r *http.Request) {
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
		// The client's deadline travels in a header, as grpc-timeout does.
		if ms, err := strconv.Atoi(r.Header.Get(deadlineHeader)); err == nil && ms > 0 {
			ctx, cancel := context.WithTimeout(r.Context(), time.Duration(ms)*time.Millisecond)
			defer cancel()
			r = r.WithContext(ctx)
		}
		(*s.protect.Load())(work).ServeHTTP(w, r)
	})
	mux.HandleFunc("POST /mode", func(w http.ResponseWriter, r *http.Request) {
		p50, err := strconv.ParseInt(r.URL.Query().Get("p50"), 10, 64)
		if err != nil || p50 <= 0 {
			http.Error(w, "p50: want a positive number of nanoseconds", http.StatusBadRequest)
			return
		}
		protect, err := newProtection(r.URL.Query().Get("name"), runtime.GOMAXPROCS(0), time.Duration(p50))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// Drop whatever the last mode left running, as a restart would, so
		// that this one starts on an idle server.
		s.b.abort.Store(true)
		s.idle()
		s.b.abort.Store(false)
		s.protect.Store(&protect)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		json.NewEncoder(w).Encode(SoakSample{HeapInuse: ms.HeapInuse, Goroutines: runtime.NumGoroutine()})
	})
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go s.http.Serve(ln)
	return s, "http://" + ln.Addr().String(), nil
}

// newProtection builds a mode's middleware. A CPU-bound service's knee is
// about one request per core; the fixed limits use it, the adaptive one
// starts four times above it and finds it.
func newProtection(mode string, cores int, p50 time.Duration) (func(http.Handler) http.Handler, error) {
	maxWait := 2 * p50
	switch mode {
	case "none":
		return func(h http.Handler) http.Handler { return h }, nil
	case "afloat-fixed":
		b, err := bulkhead.New(cores, bulkhead.WithQueue(cores), bulkhead.WithMaxWait(maxWait))
		if err != nil {
			return nil, err
		}
		return b.Middleware(), nil
	case "afloat-adaptive":
		b, err := bulkhead.New(4*cores, bulkhead.WithQueue(cores), bulkhead.WithMaxWait(maxWait),
			bulkhead.WithAdaptive(bulkhead.AdaptiveConfig{}))
		if err != nil {
			return nil, err
		}
		return b.Middleware(), nil
	case "failsafe-go":
		fb := fsbulkhead.NewBuilder[any](uint(cores)).WithMaxWaitTime(maxWait).Build()
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if err := fb.AcquirePermitWithMaxWait(r.Context(), maxWait); err != nil {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				defer fb.ReleasePermit()
				next.ServeHTTP(w, r)
			})
		}, nil
	}
	return nil, fmt.Errorf("%w: mode %q: want one of %v", ErrConfig, mode, Modes)
}

// call makes one request and reports its status and latency; status 0 is
// a give-up at the deadline.
func call(ctx context.Context, client *http.Client, url string, deadline time.Duration) (int, time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set(deadlineHeader, strconv.Itoa(int(deadline.Milliseconds())))
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return 0, time.Since(start)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, time.Since(start)
}

// noLoad measures latency with one request at a time.
func noLoad(ctx context.Context, client *http.Client, url string, n int) (p50, p99 time.Duration) {
	var ds []time.Duration
	for range n {
		if _, d := call(ctx, client, url, time.Minute); ctx.Err() == nil {
			ds = append(ds, d)
		}
	}
	slices.Sort(ds)
	if len(ds) == 0 {
		return 0, 0
	}
	return ds[len(ds)/2], ds[len(ds)*99/100]
}

// capacity measures throughput with a closed loop of workers.
func capacity(ctx context.Context, client *http.Client, url string, workers int, d time.Duration) float64 {
	var done atomic.Int64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Now().Before(stop) && ctx.Err() == nil {
				if status, _ := call(ctx, client, url, time.Minute); status == http.StatusOK {
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(done.Load()) / d.Seconds()
}

// outcome is one request of the open loop.
type outcome struct {
	sent    time.Duration // since the start of the run
	status  int
	latency time.Duration
}

// runPhases sends the open-loop load of every phase and sums it up.
func runPhases(ctx context.Context, client *http.Client, url string, rep Report, cfg Config) ModeReport {
	var mu sync.Mutex
	var outs []outcome
	var wg sync.WaitGroup
	start := time.Now()
	var phaseEnds []time.Duration
	at := time.Duration(0)
	for _, ph := range cfg.Phases {
		at += ph.Duration
		phaseEnds = append(phaseEnds, at)
	}
	// One tick a millisecond; each sends the requests due by then, so the
	// rate holds even when the scheduler is late.
	rate := func(t time.Duration) float64 {
		for i, end := range phaseEnds {
			if t < end {
				return cfg.Phases[i].Load * rep.Capacity
			}
		}
		return 0
	}
	total := phaseEnds[len(phaseEnds)-1]
	ticker := time.NewTicker(time.Millisecond)
	defer ticker.Stop()
	owed := 0.0
	last := time.Duration(0)
	for now := time.Since(start); now < total && ctx.Err() == nil; now = time.Since(start) {
		owed += rate(now) * (now - last).Seconds()
		last = now
		for ; owed >= 1; owed-- {
			sent := time.Since(start)
			wg.Go(func() {
				status, lat := call(ctx, client, url, cfg.Deadline)
				mu.Lock()
				outs = append(outs, outcome{sent: sent, status: status, latency: lat})
				mu.Unlock()
			})
		}
		<-ticker.C
	}
	wg.Wait()
	return summarizeLive(outs, phaseEnds, rep, cfg)
}

func summarizeLive(outs []outcome, phaseEnds []time.Duration, rep Report, cfg Config) ModeReport {
	mr := ModeReport{Recovery: map[string]time.Duration{}}
	begin := time.Duration(0)
	for i, ph := range cfg.Phases {
		end := phaseEnds[i]
		pr := PhaseReport{Name: ph.Name, Load: ph.Load}
		var lat []time.Duration
		for _, o := range outs {
			if o.sent < begin || o.sent >= end {
				continue
			}
			pr.Sent++
			switch {
			case o.status == http.StatusOK && o.latency <= cfg.Deadline:
				pr.Good++
				lat = append(lat, o.latency)
			case o.status == http.StatusServiceUnavailable:
				pr.Rejected++
			default:
				pr.Timeouts++
			}
		}
		pr.Goodput = float64(pr.Good) / (end - begin).Seconds() / rep.Capacity
		if len(lat) > 0 {
			slices.Sort(lat)
			pr.P50, pr.P99 = lat[len(lat)/2], lat[len(lat)*99/100]
		}
		mr.Phases = append(mr.Phases, pr)
		if i > 0 && cfg.Phases[i-1].Load > 1 && ph.Load < 1 {
			mr.Recovery[cfg.Phases[i-1].Name] = recovery(outs, begin, end, 2*rep.NoLoadP99, cfg.Deadline)
		}
		begin = end
	}
	return mr
}

// recovery finds the first moment after from such that the second after it
// has every answer within limit and no give-up; −1 if none before to.
func recovery(outs []outcome, from, to, limit, deadline time.Duration) time.Duration {
	const bucket = 100 * time.Millisecond
	n := int((to - from) / bucket)
	if n <= 0 {
		return -1
	}
	bad := make([]bool, n)
	for _, o := range outs {
		if o.sent < from || o.sent >= to {
			continue
		}
		i := int((o.sent - from) / bucket)
		if o.status == 0 || o.latency > deadline || (o.status == http.StatusOK && o.latency > limit) {
			bad[i] = true
		}
	}
	for i := 0; i+10 <= n; i++ {
		if !slices.Contains(bad[i:i+10], true) {
			return time.Duration(i) * bucket
		}
	}
	return -1
}

// ErrStopped is returned by Soak when its context ends early.
var ErrStopped = errors.New("live: stopped")

// SoakSample is the process's state at one moment of a soak.
type SoakSample struct {
	At         time.Duration `json:"at_ns"`
	HeapInuse  uint64        `json:"heap_inuse"`
	Goroutines int           `json:"goroutines"`
	Good       int           `json:"good"`
	Rejected   int           `json:"rejected"`
}

// Soak runs a long overload at load × capacity through a mode's protection
// in the server process, sampling the server's heap (after a GC) and
// goroutines every interval, and a last time once the load has stopped and
// drained. It shows whether memory and goroutines stay flat. The load is
// above 0 and at most MaxLoad, the interval MinSoakEvery to MaxSoakEvery,
// and d SoakIntervals intervals to MaxSoak; anything else is ErrConfig.
func Soak(ctx context.Context, exe, mode string, load float64, d, interval time.Duration, progress func(SoakSample)) ([]SoakSample, error) {
	switch {
	case !(load > 0 && load <= MaxLoad): // and not NaN
		return nil, fmt.Errorf("%w: soak at %v × capacity: want a load above 0 and at most %d", ErrConfig, load, MaxLoad)
	case interval < MinSoakEvery || interval > MaxSoakEvery:
		return nil, fmt.Errorf("%w: soak sampled every %v: want %v to %v", ErrConfig, interval, MinSoakEvery, MaxSoakEvery)
	case d < SoakIntervals*interval || d > MaxSoak:
		return nil, fmt.Errorf("%w: soak of %v: want %d × the sampling interval (%v) to 24h, for three samples under load", ErrConfig, d, SoakIntervals, SoakIntervals*interval)
	}
	if !slices.Contains(Modes, mode) {
		return nil, fmt.Errorf("%w: mode %q: want one of %v", ErrConfig, mode, Modes)
	}
	work := 5 * time.Millisecond
	srv, err := startChild(ctx, exe, work)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	defer pinSelf()()
	client := newLoadClient()
	defer client.CloseIdleConnections()
	p50, _ := noLoad(ctx, client, srv.url+"/none", 100)
	capa := capacity(ctx, client, srv.url+"/none", 4, time.Second)
	if err := srv.setMode(ctx, client, mode, p50); err != nil {
		return nil, err
	}

	var good, rejected atomic.Int64
	sample := func(at time.Duration) (SoakSample, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.url+"/stats", nil)
		res, err := client.Do(req)
		if err != nil {
			return SoakSample{}, fmt.Errorf("live: reading the server's stats: %w", err)
		}
		defer res.Body.Close()
		var st SoakSample
		if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
			return SoakSample{}, fmt.Errorf("live: reading the server's stats: %w", err)
		}
		st.At, st.Good, st.Rejected = at, int(good.Load()), int(rejected.Load())
		if progress != nil {
			progress(st)
		}
		return st, nil
	}
	first, err := sample(0)
	if err != nil {
		return nil, err
	}
	samples := []SoakSample{first}
	var wg sync.WaitGroup
	start := time.Now()
	next := interval
	ticker := time.NewTicker(time.Millisecond)
	defer ticker.Stop()
	owed := 0.0
	last := time.Duration(0)
	for now := time.Since(start); now < d; now = time.Since(start) {
		if ctx.Err() != nil {
			wg.Wait()
			return samples, ErrStopped
		}
		owed += load * capa * (now - last).Seconds()
		last = now
		for ; owed >= 1; owed-- {
			wg.Go(func() {
				switch status, _ := call(ctx, client, srv.url+"/work", 20*work); status {
				case http.StatusOK:
					good.Add(1)
				case http.StatusServiceUnavailable:
					rejected.Add(1)
				}
			})
		}
		if now >= next {
			st, err := sample(now)
			if err != nil {
				wg.Wait()
				return samples, err
			}
			samples = append(samples, st)
			next += interval
		}
		<-ticker.C
	}
	wg.Wait()
	client.CloseIdleConnections()
	time.Sleep(200 * time.Millisecond) // the server sees its connections close
	st, err := sample(time.Since(start))
	if err != nil {
		return samples, err
	}
	return append(samples, st), nil
}

// Flat reports whether a soak's samples stayed flat: the heap at the end
// of the load within slack of its median during the load, and the
// goroutines back to where they started, give or take a few.
func Flat(samples []SoakSample, slack uint64) error {
	if len(samples) < 5 {
		return fmt.Errorf("live: %d soak samples, want at least 5: one before the load, three under it, one after", len(samples))
	}
	during := samples[1 : len(samples)-1]
	heaps := make([]uint64, len(during))
	for i, s := range during {
		heaps[i] = s.HeapInuse
	}
	slices.Sort(heaps)
	median := heaps[len(heaps)/2]
	last := samples[len(samples)-2]
	if last.HeapInuse > median+slack {
		return fmt.Errorf("live: heap grew to %d bytes at the end of the load, median %d", last.HeapInuse, median)
	}
	first, end := samples[0], samples[len(samples)-1]
	if end.Goroutines > first.Goroutines+5 {
		return fmt.Errorf("live: %d goroutines after the load, %d before", end.Goroutines, first.Goroutines)
	}
	return nil
}
