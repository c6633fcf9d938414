package ops

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Health and metrics: GET /metrics (Prometheus' text format), GET
// /healthz (the process is alive and serving: always 200) and GET /readyz
// (200 when ready, 503 when not, with a JSON body that says why), on the
// process's API listener. They are cheap and read-only: no call leaves
// the process, nothing is written. docs/quota/operations.md, "Metrics and
// health",
// says what ready means for each process and why.

// maxScrapes bounds the scrapes served at once: a scrape reads every
// tenant's state, which with many tenants is the costliest GET here.
const maxScrapes = 4

// Readiness is the body of GET /readyz.
type Readiness struct {
	Ready bool `json:"ready"`
	// Role is the coordinator's: leader, follower, or candidate (won the
	// election, loading the ledger); empty for a region agent.
	Role string `json:"role,omitempty"`
	// Leader is the URL of the leader a follower knows of.
	Leader string `json:"leader,omitempty"`
	Epoch  uint64 `json:"epoch,omitempty"`
	// Waiting lists a region's tenants without a valid lease (at most
	// 100 of them; Missing counts them all).
	Waiting []string `json:"waiting,omitempty"`
	Missing int      `json:"missing,omitempty"`
	// Progress says how far a region agent is from ready, for a person:
	// "7,200 of 10,000 tenants leased".
	Progress string `json:"progress,omitempty"`
	// Standby says why a region agent waits: another agent holds its
	// region, and this one may attach once that one's leases have ended.
	Standby string `json:"standby,omitempty"`
	// Reason says why a coordinator follower is not ready: "no leader"
	// when it knows of none, or has seen none leading for longer than
	// the election bound.
	Reason string `json:"reason,omitempty"`
}

// Observe serves GET /metrics from reg, GET /healthz and GET /readyz from
// ready on mux.
func Observe(mux *http.ServeMux, reg *prometheus.Registry, ready func() Readiness) {
	mux.Handle("/metrics", GetOnly(promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		MaxRequestsInFlight: maxScrapes, Timeout: 10 * time.Second,
		ErrorHandling: promhttp.ContinueOnError, // a bad series must not hide the others
	})))
	mux.Handle("/healthz", GetOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("ok\n")) //nolint:errcheck // the client went away
	})))
	mux.Handle("/readyz", GetOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rd := ready()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !rd.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(rd) //nolint:errcheck // the client went away
	})))
}

// GetOnly answers 405 to any method but GET and HEAD: the routes are
// read-only, whatever mux they share (the coordinator's API sits behind
// a catch-all pattern, which would otherwise take a POST /metrics).
func GetOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			HTTPError(w, http.StatusMethodNotAllowed, "quota: "+r.URL.Path+" is read-only: GET or HEAD")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// HTTPError answers code with a JSON body {"error": msg}, not to be
// cached.
func HTTPError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(struct { //nolint:errcheck // the client went away
		Error string `json:"error"`
	}{msg})
}

// WriteJSON answers v as JSON, not to be cached.
func WriteJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client went away
}
