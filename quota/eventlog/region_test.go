package eventlog

import (
	"fmt"
	"testing"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/region"
)

// TestRegionEvents: the one translation of a region's lease changes. An
// install writes the end of the lease it replaced — superseded at the
// install, or run out at its own end — then the install; a grant not
// installed writes nothing; an expiry and a return one line each. The
// clock maps the limiter's instants.
func TestRegionEvents(t *testing.T) {
	lease := func(id uint64) quota.Lease {
		return quota.Lease{ID: id, Tenant: "acme", Region: "eu", Epoch: 3}
	}
	clock := func(t int64) int64 { return 1000 + t }
	line := func(e *Event) string {
		return fmt.Sprintf("%d %s %s %s %d %d %v", e.T, e.Kind, e.Tenant, e.Region, e.ID, e.Epoch, e.Balance)
	}
	for step, tc := range []struct {
		write func(w Writer)
		want  []string
	}{
		{func(w Writer) { InstallEvents(region.Installed{Lease: lease(2), Dropped: lease(1)}, 50, clock, w) },
			[]string{"1050 supersede acme eu 1 0 0", "1050 install acme eu 2 3 0"}},
		{func(w Writer) {
			InstallEvents(region.Installed{Lease: lease(2), Expired: lease(1), ExpiredAt: 40}, 50, clock, w)
		},
			[]string{"1040 expire acme eu 1 0 0", "1050 install acme eu 2 3 0"}},
		{func(w Writer) { InstallEvents(region.Installed{Lease: lease(2)}, 50, clock, w) },
			[]string{"1050 install acme eu 2 3 0"}},
		{func(w Writer) { InstallEvents(region.Installed{Outcome: region.StaleEpoch}, 50, clock, w) }, nil},
		{func(w Writer) { ExpireEvent(lease(2), 70, clock, w) }, []string{"1070 expire acme eu 2 0 0"}},
		{func(w Writer) {
			ReturnEvent(quota.Return{Tenant: "acme", Region: "eu", LeaseID: 2, Balance: 5 * quota.One}, 80, clock, w)
		}, []string{"1080 return acme eu 2 0 5"}},
	} {
		var got []string
		tc.write(writerFunc(func(e *Event) { got = append(got, line(e)) }))
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("step %d: %q, want %q", step, got, tc.want)
		}
	}
}

type writerFunc func(*Event)

func (f writerFunc) Write(e *Event) { f(e) }
