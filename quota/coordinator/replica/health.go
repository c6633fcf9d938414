package replica

import (
	"net/http"

	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/internal/ops"
)

// coordReady: a coordinator is ready when it leads with the ledger loaded
// (current is not nil), or when it follows a leader it knows of, other
// than itself: such a follower does its part — it turns regions to the
// leader — and a standby that never became ready would stall a rolling
// update that waits for readiness. A replica that knows of no leader, or
// has won the election but not yet loaded the ledger, is not ready.
func coordReady(current func() *coordinator.Server, leader func() string, self string) func() ops.Readiness {
	return func() ops.Readiness {
		if srv := current(); srv != nil {
			return ops.Readiness{Ready: true, Role: "leader", Epoch: srv.Epoch(), Leader: self}
		}
		l := leader()
		if l == self {
			return ops.Readiness{Role: "candidate", Leader: l}
		}
		return ops.Readiness{Ready: l != "", Role: "follower", Leader: l}
	}
}

// coordHandler puts the health and metrics routes in front of the API.
func (m *coordMetrics) handler(api http.Handler, ready func() ops.Readiness) http.Handler {
	mux := http.NewServeMux()
	ops.Observe(mux, m.reg, ready)
	mux.Handle("/", api)
	return mux
}
