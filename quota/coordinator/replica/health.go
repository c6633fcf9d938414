package replica

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/etcdledger"
	"github.com/afloat/afloat/quota/internal/ops"
)

// coordReady: a coordinator is ready when it leads with the ledger loaded
// (current is not nil), or when it follows a leader it knows of, other
// than itself, and has seen a leader that had loaded the ledger within
// the election bound (fresh): such a follower does its part — it turns
// regions to the leader — and a standby that never became ready would
// stall a rolling update that waits for readiness. A replica that knows
// of no leader, or has won the election but not yet loaded the ledger,
// is not ready; nor is a follower that has seen no leader leading for
// longer than the bound (etcd unreachable from it, or a winner that never
// loads the ledger): its readiness would hide that no replica leads.
func coordReady(current func() *coordinator.Server, leader func() string, self string, fresh func() bool) func() ops.Readiness {
	return func() ops.Readiness {
		if srv := current(); srv != nil {
			return ops.Readiness{Ready: true, Role: "leader", Epoch: srv.Epoch(), Leader: self}
		}
		l := leader()
		switch {
		case l == self:
			return ops.Readiness{Role: "candidate", Leader: l}
		case l == "":
			return ops.Readiness{Role: "follower", Reason: noLeader}
		case !fresh():
			return ops.Readiness{Role: "follower", Leader: l, Reason: noLeader}
		}
		return ops.Readiness{Ready: true, Role: "follower", Leader: l}
	}
}

// noLeader is a follower's reason for not being ready.
const noLeader = "no leader"

// electionBound is how long a follower may go without seeing a leader
// that has loaded the ledger before it says there is none: a dead
// leader's election key lives for up to the session TTL, and its
// successor then wins and reads the ledger; twice the TTL covers both
// with a margin, so that a failover does not flip the followers.
func electionBound(sessionTTL int) time.Duration {
	if sessionTTL <= 0 {
		sessionTTL = etcdledger.DefaultSessionTTL
	}
	return 2 * time.Duration(sessionTTL) * time.Second
}

// sighting is when a follower last saw a leader that had loaded the
// ledger, in Unix nanoseconds (0: never). Safe for concurrent use.
type sighting struct{ at atomic.Int64 }

func (s *sighting) saw(now time.Time) { s.at.Store(now.UnixNano()) }

// within: a leader was seen at most bound before now.
func (s *sighting) within(now time.Time, bound time.Duration) bool {
	at := s.at.Load()
	return at != 0 && now.UnixNano()-at <= int64(bound)
}

// coordHandler puts the health and metrics routes in front of the API.
func (m *coordMetrics) handler(api http.Handler, ready func() ops.Readiness) http.Handler {
	mux := http.NewServeMux()
	ops.Observe(mux, m.reg, ready)
	mux.Handle("/", api)
	return mux
}
