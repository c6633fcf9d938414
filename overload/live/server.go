package live

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	fsbulkhead "github.com/failsafe-go/failsafe-go/bulkhead"

	"github.com/afloat/afloat/bulkhead"
	"github.com/afloat/afloat/bulkhead/bulkheadhttp"
)

// ServerEnv, set in a process's environment, makes ServeIfChild turn that
// process into the server of a live comparison. Its value is the work of
// one request, as a duration ("5ms").
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
	b := &burner{abort: new(atomic.Bool)}
	b.fit(d)
	srv, url, err := serve(b)
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

// burner does a fixed amount of CPU work: a number of SHA-256 rounds
// fitted to take the work's CPU time on the server's core. Fixed work, not
// a wall-clock loop, so that contention makes requests slower as it does
// in a real server. It yields every ~100 µs, as a handler that makes calls
// does: without that, requests running on every core keep the new ones
// waiting in Go's run queue, where no bulkhead can see them. When abort is
// set, work stops early: between modes the backlog an unprotected server
// built up is dropped, as restarting it would.
type burner struct {
	rounds atomic.Int64
	abort  *atomic.Bool
}

var sink atomic.Uint64

func (b *burner) burn() { b.burnN(int(b.rounds.Load())) }

func (b *burner) burnN(n int) {
	var h [32]byte
	for i := range n {
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

// fit sets the rounds so that a request takes work of CPU time, and
// returns the share of the wall time the process had its core meanwhile
// (−1 where the process's CPU time cannot be read).
//
// It times bursts of about 10 ms by the process's CPU time, not the wall
// clock, and keeps the cheapest: CPU time is what another process on the
// core cannot inflate, and the cheapest burst is the one least disturbed
// by cache misses and frequency changes.
func (b *burner) fit(work time.Duration) float64 {
	n := 256
	for { // a burst long enough to time: about 10 ms
		start := time.Now()
		b.burnN(n)
		if time.Since(start) > 10*time.Millisecond || n > 1<<30 {
			break
		}
		n *= 2
	}
	best := time.Duration(1 << 62)
	var cpuSum, wallSum time.Duration
	measured := true
	for range 7 {
		c0, ok0 := processCPU()
		w0 := time.Now()
		b.burnN(n)
		wall := time.Since(w0)
		c1, ok1 := processCPU()
		cost := wall
		if ok0 && ok1 {
			cost = c1 - c0
			cpuSum += c1 - c0
		} else {
			measured = false
		}
		wallSum += wall
		if cost > 0 {
			best = min(best, cost)
		}
	}
	b.rounds.Store(max(1, int64(float64(n)*float64(work)/float64(best))))
	if !measured || wallSum <= 0 {
		return -1
	}
	return float64(cpuSum) / float64(wallSum)
}

// deadlineHeader carries the client's remaining time to the server, so
// that a bulkhead can refuse a request it cannot serve in time.
const deadlineHeader = "X-Deadline-Ms"

// cpuSample is the process's CPU time at a moment, both since the current
// mode was set.
type cpuSample struct {
	At  time.Duration `json:"at_ns"`
	CPU time.Duration `json:"cpu_ns"`
}

// liveServer is the server under test; its protection is swapped between
// modes.
type liveServer struct {
	http     *http.Server
	ln       net.Listener
	protect  atomic.Pointer[func(http.Handler) http.Handler]
	b        *burner
	inflight atomic.Int64 // requests in the handler

	mu        sync.Mutex
	modeStart time.Time
	cpuStart  time.Duration
	samples   []cpuSample
}

// idle waits until no request is in the handler (at most 10 s).
func (s *liveServer) idle() {
	for deadline := time.Now().Add(10 * time.Second); s.inflight.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *liveServer) Close() { s.http.Close() }

// sample records the process's CPU time every 100 ms, so that the parent
// can tell how much of its core the server had in each phase. Under a
// backlog the sampler runs late, but each sample is stamped when taken.
func (s *liveServer) sample(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cpu, ok := processCPU()
		if !ok {
			return
		}
		s.mu.Lock()
		if len(s.samples) < 100000 { // a day of samples; a soak samples itself
			s.samples = append(s.samples, cpuSample{At: time.Since(s.modeStart), CPU: cpu - s.cpuStart})
		}
		s.mu.Unlock()
	}
}

func serve(b *burner) (*liveServer, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("live: listen: %w", err)
	}
	s := &liveServer{ln: ln, b: b, modeStart: time.Now()}
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
		cpu, _ := processCPU()
		s.mu.Lock()
		s.modeStart, s.cpuStart, s.samples = time.Now(), cpu, s.samples[:0]
		s.mu.Unlock()
	})
	mux.HandleFunc("POST /calibrate", func(w http.ResponseWriter, r *http.Request) {
		work, err := strconv.ParseInt(r.URL.Query().Get("work"), 10, 64)
		if err != nil || work <= 0 {
			http.Error(w, "work: want a positive number of nanoseconds", http.StatusBadRequest)
			return
		}
		share := s.b.fit(time.Duration(work))
		json.NewEncoder(w).Encode(Calibration{Rounds: int(s.b.rounds.Load()), CPUShare: share})
	})
	mux.HandleFunc("GET /cpu", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		json.NewEncoder(w).Encode(s.samples)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		json.NewEncoder(w).Encode(SoakSample{HeapInuse: ms.HeapInuse, Goroutines: runtime.NumGoroutine()})
	})
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	s.http.RegisterOnShutdown(cancel)
	go s.sample(ctx)
	go func() {
		s.http.Serve(ln)
		cancel()
	}()
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
		return bulkheadhttp.Middleware(b), nil
	case "afloat-adaptive":
		b, err := bulkhead.New(4*cores, bulkhead.WithQueue(cores), bulkhead.WithMaxWait(maxWait),
			bulkhead.WithAdaptive(bulkhead.AdaptiveConfig{}))
		if err != nil {
			return nil, err
		}
		return bulkheadhttp.Middleware(b), nil
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
