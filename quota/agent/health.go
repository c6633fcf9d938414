package agent

import (
	"strconv"

	"github.com/afloat/afloat/quota/internal/ops"
)

// regionReady: a region agent is ready when it holds a valid lease for
// every tenant it serves — until then it refuses (hard mode) or spends
// its allowance (best effort) for some of them — and is not standing by
// for another agent of its region (standby.go), even with no tenant. Its
// answer says how far it is ("7,200 of 10,000 tenants leased") and names
// up to 100 of the tenants it waits for, from one scan of the limiter
// that takes no tenant's lock.
func (a *Agent) regionReady() ops.Readiness {
	ls := a.lim.Leases(a.now(), 100)
	rd := ops.Readiness{
		Waiting:  ls.Waiting,
		Missing:  ls.Tenants - ls.Leased,
		Progress: thousands(ls.Leased) + " of " + thousands(ls.Tenants) + " tenants leased",
	}
	rd.Standby = a.standby()
	rd.Ready = rd.Missing == 0 && rd.Standby == ""
	return rd
}

// thousands writes n with a comma between each group of three digits, as
// the docs write figures: 100,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3+1)
	if neg {
		out = append(out, '-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
