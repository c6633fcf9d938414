package service

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/afloat/afloat/quota/coordinator"
)

// Health and metrics: GET /metrics (Prometheus' text format), GET
// /healthz (the process is alive and serving: always 200) and GET /readyz
// (200 when ready, 503 when not, with a JSON body that says why), on the
// process's API listener. They are cheap and read-only: no call leaves
// the process, nothing is written. docs/quota.md, "Metrics and health",
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
	// Standby says why a region agent waits: another agent holds its
	// region, and this one may attach once that one's leases have ended.
	Standby string `json:"standby,omitempty"`
}

// observe serves GET /metrics from reg, GET /healthz and GET /readyz from
// ready on mux.
func observe(mux *http.ServeMux, reg *prometheus.Registry, ready func() Readiness) {
	mux.Handle("/metrics", getOnly(promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		MaxRequestsInFlight: maxScrapes, Timeout: 10 * time.Second,
		ErrorHandling: promhttp.ContinueOnError, // a bad series must not hide the others
	})))
	mux.Handle("/healthz", getOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte("ok\n")) //nolint:errcheck // the client went away
	})))
	mux.Handle("/readyz", getOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rd := ready()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !rd.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(rd) //nolint:errcheck // the client went away
	})))
}

// getOnly answers 405 to any method but GET and HEAD: the routes are
// read-only, whatever mux they share (the coordinator's API sits behind
// a catch-all pattern, which would otherwise take a POST /metrics).
func getOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			httpError(w, http.StatusMethodNotAllowed, "quota: "+r.URL.Path+" is read-only: GET or HEAD")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// regionReady: a region agent is ready when it holds a valid lease for
// every tenant it serves — until then it refuses (hard mode) or spends
// its allowance (best effort) for some of them — and is not standing by
// for another agent of its region (standby.go), even with no tenant.
func (a *Agent) regionReady() Readiness {
	now := a.now()
	rd := Readiness{}
	for _, t := range a.lim.Tenants() {
		if !a.lim.Status(now, t).Valid {
			if rd.Missing < 100 {
				rd.Waiting = append(rd.Waiting, t)
			}
			rd.Missing++
		}
	}
	rd.Standby = a.standby()
	rd.Ready = rd.Missing == 0 && rd.Standby == ""
	return rd
}

// coordReady: a coordinator is ready when it leads with the ledger loaded
// (current is not nil), or when it follows a leader it knows of, other
// than itself: such a follower does its part — it turns regions to the
// leader — and a standby that never became ready would stall a rolling
// update that waits for readiness. A replica that knows of no leader, or
// has won the election but not yet loaded the ledger, is not ready.
func coordReady(current func() *coordinator.Server, leader func() string, self string) func() Readiness {
	return func() Readiness {
		if srv := current(); srv != nil {
			return Readiness{Ready: true, Role: "leader", Epoch: srv.Epoch(), Leader: self}
		}
		l := leader()
		if l == self {
			return Readiness{Role: "candidate", Leader: l}
		}
		return Readiness{Ready: l != "", Role: "follower", Leader: l}
	}
}

// coordHandler puts the health and metrics routes in front of the API.
func (m *coordMetrics) handler(api http.Handler, ready func() Readiness) http.Handler {
	mux := http.NewServeMux()
	observe(mux, m.reg, ready)
	mux.Handle("/", api)
	return mux
}
