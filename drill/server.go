package drill

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/afloat/afloat/internal/hostcheck"
	"github.com/afloat/afloat/sim"
)

// maxBody bounds a request's body: a lever is a few dozen bytes, an
// Alertmanager notification a few kilobytes an alert.
const maxBody = 1 << 20

// Server serves a drill over HTTP: its metrics, its levers, its status
// and, once it has ended, its postmortem (docs/drill.md, "HTTP"). It is an
// http.Handler; Serve runs one on a listener. A Server is safe for
// concurrent use.
type Server struct {
	cfg    Config
	clock  Clock
	logger *slog.Logger
	mux    *http.ServeMux

	mu     sync.Mutex // guards d and the alerts
	d      *Drill
	alerts []AlertEvent
	seen   map[string]bool // the alerts' keys told so far
	timer  Timer
	ended  chan struct{}
	once   sync.Once

	// The postmortem's score, par and coach, computed once when the drill
	// ends (a second or so), until Stop.
	ctx     context.Context
	stop    context.CancelFunc
	judged  judged
	judgeOK error
	ready   chan struct{}
}

// NewServer starts a drill of cfg at its clock's now: minute 0 is under
// way at once, and the drill ends Minutes × Speed later. It refuses a
// configuration that fails Validate.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, clock: cfg.Clock, logger: cfg.Logger, ended: make(chan struct{}), ready: make(chan struct{}), seen: map[string]bool{}}
	s.ctx, s.stop = context.WithCancel(context.Background())
	if s.clock == nil {
		s.clock = realClock{}
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	now := s.clock.Now()
	d, err := New(cfg, now)
	if err != nil {
		return nil, err
	}
	s.d = d

	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(s.sample, cfg.Scenario, cfg.Speed))
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	s.mux.HandleFunc("GET /status", s.status)
	s.mux.HandleFunc("POST /lever", s.authorized(s.lever))
	s.mux.HandleFunc("POST /alerts", s.authorized(s.alertmanager))
	s.mux.HandleFunc("GET /postmortem", s.postmortem)
	s.timer = s.clock.AfterFunc(d.End().Sub(now), s.finish)
	return s, nil
}

// NewToken returns a random token of 32 hex digits, for a drill started
// without one.
func NewToken() string {
	b := make([]byte, 16)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b)
}

// sample is the metrics at the clock's now.
func (s *Server) sample() sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.d.sampleAt(s.clock.Now())
}

// finish marks the drill ended and starts judging it.
func (s *Server) finish() {
	s.once.Do(func() {
		close(s.ended)
		s.mu.Lock()
		run, frames := s.d.Run(), s.d.Frames(s.d.End())
		s.mu.Unlock()
		go func() {
			s.judged, s.judgeOK = judge(s.ctx, run, frames)
			close(s.ready)
		}()
	})
}

// Ended is closed when the drill ends.
func (s *Server) Ended() <-chan struct{} { return s.ended }

// Stop stops the drill's timer and any judging under way: Ended is never
// closed unless it was.
func (s *Server) Stop() {
	s.timer.Stop()
	s.stop()
}

// Postmortem returns the drill's postmortem in Markdown (docs/drill.md,
// "The postmortem"), with the alerts delivered so far. Before the end it
// returns ErrNotEnded: the postmortem reveals the incident. It waits for
// the score, par and the coach, computed once when the drill ends, or
// for ctx.
func (s *Server) Postmortem(ctx context.Context) (string, error) {
	select {
	case <-s.ended:
	default:
		s.mu.Lock()
		end := s.d.End()
		s.mu.Unlock()
		return "", fmt.Errorf("%w until %s: the postmortem reveals the incident", ErrNotEnded, end.Format(time.RFC3339))
	}
	select {
	case <-s.ready:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if s.judgeOK != nil {
		return "", fmt.Errorf("drill: judging the run: %w", s.judgeOK)
	}
	var b strings.Builder
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.d.writePostmortem(&b, s.judged, s.alerts, s.cfg.Console)
	return b.String(), err
}

// Status returns the drill's status now.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.d.StatusAt(s.clock.Now())
}

// Lever pulls a lever now, as POST /lever does (Drill.Lever).
func (s *Server) Lever(control sim.Control, value float64) (sim.Action, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.d.Lever(s.clock.Now(), control, value)
	if err == nil {
		s.logger.Info("lever", "minute", a.Minute, "clock", sim.Clock(s.d.sc.Start+a.Minute), "control", a.Control, "value", a.Value)
	}
	return a, err
}

// ServeHTTP answers only Host names on loopback unless AllowRemote: a web
// page on a name rebound to 127.0.0.1 must not read the drill.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.AllowRemote && !hostcheck.Loopback(r.Host) {
		writeError(w, http.StatusForbidden, "Host", fmt.Sprintf("drill: host %q: a drill on loopback answers only to localhost, 127.0.0.1 and [::1] "+
			"(a protection against DNS rebinding); run it with --allow-remote to answer other names", r.Host))
		return
	}
	s.mux.ServeHTTP(w, r)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v) //nolint:errcheck // the client has gone
}

// apiError is the body of a refusal: the message, and the field at
// fault when there is one.
type apiError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

func writeError(w http.ResponseWriter, status int, field, msg string) {
	writeJSON(w, status, apiError{Error: msg, Field: field})
}

// authorized runs next for a request with the drill's bearer token and a
// body that is exactly JSON, read whole; it refuses the others.
func (s *Server) authorized(next func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	want := []byte(s.cfg.Token)
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(tok), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="afloat-drill"`)
			writeError(w, http.StatusUnauthorized, "Authorization", ErrUnauthorized.Error())
			return
		}
		if err := checkJSONType(r.Header.Get("Content-Type")); err != nil {
			writeError(w, http.StatusUnsupportedMediaType, "Content-Type", err.Error())
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeError(w, http.StatusRequestEntityTooLarge, "", fmt.Sprintf("drill: a body of more than %d bytes", maxBody))
			}
			return // else the client has gone
		}
		next(w, r, body)
	}
}

// checkJSONType accepts application/json, with at most charset=utf-8:
// the types a page of another site can POST without a CORS preflight are
// not JSON.
func checkJSONType(ct string) error {
	want := fmt.Errorf("drill: Content-Type %q: want application/json", ct)
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return want
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return fmt.Errorf("%w with at most charset=utf-8", want)
		}
	}
	return nil
}

func (s *Server) lever(w http.ResponseWriter, r *http.Request, body []byte) {
	control, value, err := ParseLever(body)
	if err != nil {
		var le *LeverError
		errors.As(err, &le)
		writeError(w, http.StatusBadRequest, le.Field, err.Error())
		return
	}
	a, err := s.Lever(control, value)
	var le *LeverError
	switch {
	case errors.Is(err, ErrEnded):
		writeError(w, http.StatusConflict, "", err.Error())
		return
	case errors.As(err, &le):
		writeError(w, http.StatusBadRequest, le.Field, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, "", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, Pulled{Action: a, Clock: sim.Clock(s.d.sc.Start + a.Minute), At: s.d.minuteStart(a.Minute)})
}

func (s *Server) postmortem(w http.ResponseWriter, r *http.Request) {
	pm, err := s.Postmortem(r.Context())
	switch {
	case errors.Is(err, ErrNotEnded):
		writeError(w, http.StatusConflict, "", err.Error())
	case r.Context().Err() != nil:
		// the client has gone
	case err != nil:
		writeError(w, http.StatusInternalServerError, "", err.Error())
	default:
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		io.WriteString(w, pm) //nolint:errcheck
	}
}

// webhook is the part of an Alertmanager notification the drill reads
// (its webhook_config's JSON, version 4).
type webhook struct {
	Alerts []struct {
		Status      string            `json:"status"`
		Labels      map[string]string `json:"labels"`
		StartsAt    time.Time         `json:"startsAt"`
		EndsAt      time.Time         `json:"endsAt"`
		Fingerprint string            `json:"fingerprint"`
	} `json:"alerts"`
}

// alertmanager takes the team's Alertmanager's notifications (a
// webhook_config whose url is the drill's /alerts, with the drill's token
// as its bearer credentials), for the postmortem's timeline: each alert
// firing and resolving is told once, however often Alertmanager repeats
// it.
func (s *Server) alertmanager(w http.ResponseWriter, r *http.Request, body []byte) {
	var n webhook
	if err := json.Unmarshal(body, &n); err != nil {
		writeError(w, http.StatusBadRequest, "", "drill: not an Alertmanager notification (webhook, version 4): "+err.Error())
		return
	}
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range n.Alerts {
		ev := AlertEvent{Name: a.Labels["alertname"], Severity: a.Labels["severity"], Status: a.Status, At: a.StartsAt, Received: now}
		if a.Status == "resolved" {
			ev.At = a.EndsAt
		}
		ev.key = a.Fingerprint + " " + a.Status + " " + a.StartsAt.String()
		if ev.Name == "" || (a.Status != "firing" && a.Status != "resolved") || s.seen[ev.key] {
			continue
		}
		s.seen[ev.key] = true
		s.alerts = append(s.alerts, ev)
		s.logger.Info("alert", "name", ev.Name, "severity", ev.Severity, "status", ev.Status)
	}
	writeJSON(w, http.StatusOK, map[string]int{"alerts": len(s.alerts)})
}

// Alerts returns the alerts the team's Alertmanager has delivered, in the
// order they came.
func (s *Server) Alerts() []AlertEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.alerts)
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.Status())
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	st := s.Status()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "afloat drill: %s (%s), minute %d of %d, %s simulated, a simulated minute every %s.\n\n",
		st.Title, st.Scenario, st.Minute, st.Minutes, st.Clock, st.Speed)
	fmt.Fprint(w, "GET  /metrics     the service's metrics, for Prometheus\n"+
		"GET  /status      the drill's minute and the levers pulled (JSON)\n"+
		"POST /lever       pull a lever: {\"control\": \"fleet_floor\", \"value\": 20}, Authorization: Bearer TOKEN\n"+
		"                  (afloat drill lever NAME [VALUE] does it from the command line)\n"+
		"POST /alerts      the team's Alertmanager's webhook (the same token), for the postmortem's timeline\n"+
		"GET  /postmortem  the postmortem in Markdown, once the drill has ended\n")
}

// Serve runs the drill on ln until ctx is done, then shuts down: requests
// in flight get five seconds. It closes ln.
func Serve(ctx context.Context, ln net.Listener, cfg Config) error {
	s, err := NewServer(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	defer s.Stop()
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	s.logger.Info("drill running", "url", "http://"+ln.Addr().String()+"/", "scenario", cfg.Scenario, "seed", cfg.Seed,
		"speed", cfg.Speed, "minutes", s.d.Minutes(), "ends", s.d.End().Format(time.RFC3339))
	select {
	case err := <-done:
		return fmt.Errorf("drill: serve: %w", err)
	case <-s.Ended():
		s.logger.Info("drill ended; judging it, then serving its final state until interrupted")
		if pm, err := s.Postmortem(ctx); err == nil && cfg.Postmortem != nil {
			if _, err := io.WriteString(cfg.Postmortem, pm); err != nil {
				s.logger.Warn("writing the postmortem", "err", err)
			}
		} else if err != nil && ctx.Err() == nil {
			s.logger.Warn("postmortem", "err", err)
		}
	case <-ctx.Done():
	}
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		srv.Close()
		return fmt.Errorf("drill: shutdown: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("drill: serve: %w", err)
	}
	return nil
}

// Run listens on cfg.Addr and runs the drill there (Serve).
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("drill: listen: %w", err)
	}
	return Serve(ctx, ln, cfg)
}
