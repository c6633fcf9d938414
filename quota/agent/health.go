package agent

import "github.com/afloat/afloat/quota/internal/ops"

// regionReady: a region agent is ready when it holds a valid lease for
// every tenant it serves — until then it refuses (hard mode) or spends
// its allowance (best effort) for some of them — and is not standing by
// for another agent of its region (standby.go), even with no tenant.
func (a *Agent) regionReady() ops.Readiness {
	now := a.now()
	rd := ops.Readiness{}
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
