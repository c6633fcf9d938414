package web

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/afloat/afloat/assign"
	"github.com/afloat/afloat/bulkhead"
	"github.com/afloat/afloat/internal/redisurl"
)

// static holds the console's page, scripts, styles, message catalogues and
// the vendored uPlot, all served from the binary.
//
//go:embed static
var static embed.FS

// Config configures the console's HTTP server. DefaultConfig gives the
// values `go run ./cmd/afloat` uses; the zero value is not valid.
type Config struct {
	Addr   string       // listen address; loopback by default
	Logger *slog.Logger // request and lifecycle logs; nil discards them

	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	ShutdownTimeout   time.Duration // how long in-flight requests get on shutdown
	MaxHeaderBytes    int           // bounds the request line, so also a share link's length
	MaxBodyBytes      int64         // bounds a POST body

	// RedisURL is the Redis of the assignment lab (redis://host:port); ""
	// runs it on an in-process Redis-compatible server, labelled as a demo
	// on the page. AssignPool names its pool ("" is afloat-console).
	// AssignWrite lets the lab pick from, remove and restore members of
	// that pool even if the lab did not create it (its creator, recorded
	// in Redis, is not the lab's); without it such a pool is only shown.
	// The lab resets (empties) only a pool it created, whatever this says.
	RedisURL    string
	AssignPool  string
	AssignWrite bool

	// Drill is the base URL of a running afloat drill (http://host:port)
	// the console follows: GET /api/drill reads its status, and the play
	// page at /?drill=1 shows the run so far, read-only (docs/drill.md).
	// "" follows none.
	Drill string

	// AllowRemote must be set to listen beyond loopback: the console has
	// no authentication. With it the console also answers to any Host
	// name; without it only to localhost and loopback addresses, which
	// stops DNS rebinding. Set on a loopback address it only turns that
	// Host check off, and Serve logs a warning saying so.
	AllowRemote bool

	// MaxInFlight API requests are served at once; MaxQueued more wait, up
	// to MaxQueueWait; beyond that the answer is 503 with Retry-After
	// (docs/api.md). The console runs them in afloat's own bulkhead.
	MaxInFlight  int
	MaxQueued    int
	MaxQueueWait time.Duration
}

// DefaultConfig returns the console's defaults: 127.0.0.1:8080, timeouts
// that a slow client cannot hold open for ever, and bodies and headers big
// enough for a run with thousands of actions.
func DefaultConfig() Config {
	return Config{
		Addr:              "127.0.0.1:8080",
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      60 * time.Second, // beyond the game's 30 s bound, after a body (15 s) and the queue (5 s)
		IdleTimeout:       120 * time.Second,
		ShutdownTimeout:   10 * time.Second,
		MaxHeaderBytes:    256 << 10,
		MaxBodyBytes:      1 << 20,
		MaxInFlight:       8,
		MaxQueued:         64,
		MaxQueueWait:      5 * time.Second,
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	_, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("%w: addr %q: want host:port, such as 127.0.0.1:8080", ErrConfig, c.Addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%w: addr %q: want a port from 0 to 65535", ErrConfig, c.Addr)
	}
	if !c.AllowRemote && c.BeyondLoopback() {
		return fmt.Errorf("%w: addr %q listens beyond loopback, and the console has no authentication: "+
			"listen on 127.0.0.1 or [::1], or allow it explicitly (--allow-remote)", ErrConfig, c.Addr)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"read header timeout", c.ReadHeaderTimeout}, {"read timeout", c.ReadTimeout},
		{"write timeout", c.WriteTimeout}, {"idle timeout", c.IdleTimeout}, {"shutdown timeout", c.ShutdownTimeout},
	} {
		if d.v <= 0 {
			return fmt.Errorf("%w: %s %v: want a positive duration", ErrConfig, d.name, d.v)
		}
	}
	if c.RedisURL != "" {
		if err := redisurl.Check(c.RedisURL, assign.ErrInvalid); err != nil {
			return fmt.Errorf("%w: redis URL: %v", ErrConfig, err)
		}
	}
	if c.AssignPool != "" {
		if err := assign.CheckPoolName(c.AssignPool); err != nil {
			return fmt.Errorf("%w: assign pool: %v", ErrConfig, err)
		}
	}
	if c.Drill != "" {
		if err := checkDrillURL(c.Drill); err != nil {
			return err
		}
	}
	if c.MaxInFlight < 1 || c.MaxInFlight > bulkhead.MaxLimit {
		return fmt.Errorf("%w: max in flight %d: want 1 to %d", ErrConfig, c.MaxInFlight, bulkhead.MaxLimit)
	}
	if c.MaxQueued < 0 || c.MaxQueued > bulkhead.MaxQueue {
		return fmt.Errorf("%w: max queued %d: want 0 to %d", ErrConfig, c.MaxQueued, bulkhead.MaxQueue)
	}
	if c.MaxQueueWait <= 0 {
		return fmt.Errorf("%w: max queue wait %v: want a positive duration", ErrConfig, c.MaxQueueWait)
	}
	if c.MaxHeaderBytes < 4096 || c.MaxBodyBytes < 4096 {
		return fmt.Errorf("%w: header and body limits %d, %d: want at least 4096 bytes", ErrConfig, c.MaxHeaderBytes, c.MaxBodyBytes)
	}
	return nil
}

// BeyondLoopback reports whether c.Addr listens beyond the loopback
// interface (which Validate refuses unless AllowRemote is set).
func (c Config) BeyondLoopback() bool {
	host, _, err := net.SplitHostPort(c.Addr)
	return err != nil || !loopbackHost(host)
}

// Warning returns what a person starting the console with c should be
// told before it listens, or "": that it is reachable beyond loopback
// without authentication, or that AllowRemote on a loopback address turns
// the Host check off. Serve logs the same once it listens.
func (c Config) Warning() string {
	switch {
	case c.AllowRemote && c.BeyondLoopback():
		return fmt.Sprintf("listening on %s, beyond loopback. The console has no authentication: "+
			"anyone who reaches it can run costly comparisons and change the assignment lab's pool. Put a proxy that authenticates in front.", c.Addr)
	case c.AllowRemote:
		return fmt.Sprintf("--allow-remote with the loopback address %s turns off the Host check: "+
			"the console answers any Host name, so a web page on a name that resolves to 127.0.0.1 (DNS rebinding) can use it "+
			"and read its answers. Leave --allow-remote out unless a proxy in front sends other host names.", c.Addr)
	}
	return ""
}

// bodyBudgetBodies is how many bodies of the largest size the console
// holds at once (32 MiB with the default 1 MiB), read or being read and
// not yet answered. Measured with TestServeUnderAbuse (96 debriefs of
// 1 MiB at once): 16 answered 16 at 145 MiB of peak memory, 32 answered 32
// at 183 MiB, 64 answered about 39 (the rest waited out the queue) at
// 275 MiB.
const bodyBudgetBodies = 32

// ErrConfig is returned for a server configuration that cannot run.
var ErrConfig = errors.New("web: invalid configuration")

// Handler returns the console: the page and its assets, and the JSON API
// (docs/api.md). The simulator keeps no state between requests: every run
// is recomputed from the request. (The overload lab keeps its few
// deterministic results, and one live comparison at a time.) It is safe
// for concurrent use.
func Handler(c Config) http.Handler {
	h, _ := newHandler(c)
	return h
}

func newHandler(c Config) (http.Handler, *lab) {
	logger := c.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	maxBody := c.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = DefaultConfig().MaxBodyBytes
	}
	assets, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	writeTimeout := c.WriteTimeout
	if writeTimeout <= 0 {
		writeTimeout = DefaultConfig().WriteTimeout
	}
	api := &api{maxBody: maxBody, logger: logger, game: newGame(writeTimeout)}
	lab := newLab(logger)
	al := newAssignLab(logger, c.RedisURL, c.AssignPool, c.AssignWrite, maxBody)
	lab.stops = append(lab.stops, al.stop)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/scenarios", api.scenarios)
	mux.HandleFunc("GET /api/run", api.run)
	mux.HandleFunc("POST /api/run", api.run)
	mux.HandleFunc("GET /api/debrief", api.debrief)
	mux.HandleFunc("POST /api/debrief", api.debrief)
	mux.HandleFunc("GET /api/explain", api.explain)
	mux.HandleFunc("POST /api/explain", api.explain)
	mux.HandleFunc("POST /api/bot", api.bot)
	var follower *drillFollower
	if c.Drill != "" {
		follower = newDrillFollower(c.Drill)
	}
	mux.HandleFunc("GET /api/drill", follower.get)
	mux.HandleFunc("POST /api/overload/compare", jsonHandler(labMaxBody, decodeCompare, lab.compare))
	mux.HandleFunc("GET /api/overload/game", lab.game)
	mux.HandleFunc("GET /api/overload/live", lab.liveGet)
	mux.HandleFunc("POST /api/overload/live", jsonHandler(labMaxBody, decodeEmpty, lab.liveStart))
	mux.HandleFunc("POST /api/quota/run", newQuotaLab(maxBody).run)
	mux.HandleFunc("GET /api/assign", al.get)
	mux.HandleFunc("POST /api/assign/pick", al.pick())
	mux.HandleFunc("POST /api/assign/remove", al.member(false))
	mux.HandleFunc("POST /api/assign/restore", al.member(true))
	mux.HandleFunc("POST /api/assign/create", al.createPool())
	mux.HandleFunc("POST /api/assign/reset", al.resetPool())
	mux.HandleFunc("POST /api/assign/load", al.load())
	mux.HandleFunc("POST /api/assign/cooldown", al.cooldown())
	mux.HandleFunc("POST /api/assign/settings", al.settings())
	mux.HandleFunc("POST /api/assign/llm", al.llmDemo())
	mux.HandleFunc("POST /api/assign/acquire", al.acquire())
	mux.HandleFunc("POST /api/assign/release", al.release())
	mux.HandleFunc("POST /api/assign/concurrency", al.concurrency())
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		if allow, ok := apiMethods[r.URL.Path]; ok {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, "", fmt.Sprintf("%s %s: want %s", r.Method, r.URL.Path, allow))
			return
		}
		writeError(w, http.StatusNotFound, "", fmt.Sprintf("no API endpoint %s %s; see docs/api.md", r.Method, r.URL.Path))
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	tags := etags(assets)
	files := http.FileServerFS(assets)
	mux.Handle("GET /static/", http.StripPrefix("/static/", noDirectories(withETag(tags, files))))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", tags["index.html"])
		http.ServeFileFS(w, r, assets, "index.html")
	})
	// From the outside in: a panic becomes a 500; every request is logged;
	// security headers; the Host check (DNS rebinding); cross-origin and
	// media-type checks on everything but GET; the body read, counted
	// apart; then the API's bulkhead.
	var hosts func(string) bool
	if !c.AllowRemote {
		hosts = loopbackHost
	}
	inflight, queued, queueWait := c.MaxInFlight, c.MaxQueued, c.MaxQueueWait
	if inflight <= 0 {
		d := DefaultConfig()
		inflight, queued, queueWait = d.MaxInFlight, d.MaxQueued, d.MaxQueueWait
	}
	b, err := bulkhead.New(inflight, bulkhead.WithQueue(queued), bulkhead.WithMaxWait(queueWait))
	if err != nil {
		panic(err) // Validate refuses what New would
	}
	var h http.Handler = mux
	h = inFlight(b, h)
	h = readBodies(maxBody, &bodyBudget{max: bodyBudgetBodies * maxBody}, h)
	h = jsonOnly(h)
	h = crossOriginGuard(h)
	h = hostGuard(hosts, h)
	h = secure(h)
	h = logRequests(logger, h)
	h = recoverPanics(logger, h)
	return h, lab
}

// apiMethods lists the methods of each endpoint, for 405 answers.
var apiMethods = map[string]string{
	"/api/scenarios": "GET",
	"/api/drill":     "GET",
	"/api/run":       "GET, POST",
	"/api/debrief":   "GET, POST",
	"/api/explain":   "GET, POST",
	"/api/bot":       "POST",

	"/api/overload/compare": "POST",
	"/api/overload/game":    "GET",
	"/api/overload/live":    "GET, POST",

	"/api/quota/run": "POST",

	"/api/assign":          "GET",
	"/api/assign/pick":     "POST",
	"/api/assign/remove":   "POST",
	"/api/assign/restore":  "POST",
	"/api/assign/create":   "POST",
	"/api/assign/reset":    "POST",
	"/api/assign/load":     "POST",
	"/api/assign/cooldown": "POST",
	"/api/assign/settings": "POST",
	"/api/assign/llm":      "POST",

	"/api/assign/acquire":     "POST",
	"/api/assign/release":     "POST",
	"/api/assign/concurrency": "POST",
}

// Run listens on c.Addr and serves the console until ctx is done, then
// shuts down gracefully: in-flight requests get c.ShutdownTimeout to
// finish.
func Run(ctx context.Context, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return fmt.Errorf("web: listen: %w", err)
	}
	return Serve(ctx, ln, c)
}

// Serve is Run on a listener the caller opened (tests use port 0). It
// closes the listener.
func Serve(ctx context.Context, ln net.Listener, c Config) error {
	if err := c.Validate(); err != nil {
		ln.Close()
		return err
	}
	logger := c.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	handler, lab := newHandler(c)
	defer lab.stop()
	// Requests do not inherit ctx's cancellation: a shutdown lets those in
	// flight finish within the grace (a request whose context ended with
	// ctx would be dropped unanswered), and cancels them when it runs out.
	requests, stopRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRequests()
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.WriteTimeout,
		IdleTimeout:       c.IdleTimeout,
		MaxHeaderBytes:    c.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return requests },
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	logger.Info("console listening", "url", "http://"+ln.Addr().String()+"/")
	if c.AllowRemote {
		if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
			logger.Warn("the console is reachable beyond loopback and has no authentication: anyone who reaches "+
				ln.Addr().String()+" can use it, and change the assignment lab's pool", "addr", ln.Addr().String())
		} else {
			logger.Warn("AllowRemote on a loopback address turns off the Host check: the console answers any Host name, "+
				"so a page on a name that resolves to loopback (DNS rebinding) can use it and read its answers", "addr", ln.Addr().String())
		}
	}

	select {
	case err := <-done:
		return fmt.Errorf("web: serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "grace", c.ShutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		stopRequests()
		srv.Close()
		return fmt.Errorf("web: shutdown: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("web: serve: %w", err)
	}
	logger.Info("stopped")
	return nil
}
