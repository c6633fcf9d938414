package eventlog

import (
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
)

// TestStepEvents: a coordinator's step becomes its lines in order — the
// leases it ended, the lease it granted with its interval on the log's
// clock and its cover, the tenant change it made (with the credit the
// change dropped), the credit a return added — every field the checker
// reads; a retry's step, which grants nothing, writes nothing.
func TestStepEvents(t *testing.T) {
	clock := func(d time.Duration) int64 { return 1_000_000_000 + int64(d) } // the log's clock 1 s ahead
	lease := func(id uint64, region string) quota.Lease {
		return quota.Lease{ID: id, Tenant: "acme", Region: region, Epoch: 3, Rate: 50 * quota.One, Burst: 100 * quota.One,
			Transfer: 10 * quota.One, Activates: 2 * time.Second, Expires: 12 * time.Second}
	}
	acme := quota.Tenant{Name: "acme", Rate: 150 * quota.One, Burst: 300 * quota.One, Regions: []string{"eu", "us"}, Mode: quota.Hard}
	older := acme
	older.Burst = 400 * quota.One
	for i, tc := range []struct {
		step coordinator.Step
		want string
	}{
		{coordinator.Step{
			Ended:   []coordinator.Ended{{Lease: lease(7, "eu"), Why: coordinator.Superseded}, {Lease: lease(8, "us"), Why: coordinator.Expired}},
			Granted: lease(9, "eu"), Cover: 4,
			Tenant:   &coordinator.TenantChange{Op: "update", By: "alice", Old: older, New: acme, Dropped: 25 * quota.One},
			Returned: quota.Return{Tenant: "acme", Region: "us", LeaseID: 8, Balance: 12 * quota.One}, Credit: 12 * quota.One,
		}, `{"t_ns":5,"ev":"end","tenant":"acme","region":"eu","id":7,"epoch":3,"why":"superseded"}
{"t_ns":5,"ev":"end","tenant":"acme","region":"us","id":8,"epoch":3,"why":"expired"}
{"t_ns":5,"ev":"lease","tenant":"acme","region":"eu","id":9,"epoch":3,"rate":50,"burst":100,"transfer":10,"activates_ns":3000000000,"expires_ns":13000000000,"cover":4}
{"t_ns":5,"ev":"tenant","tenant":"acme","n":2,"rate":150,"burst":300,"why":"update","mode":"hard","by":"alice"}
{"t_ns":5,"ev":"credit","tenant":"acme","balance":-25,"why":"tenant update"}
{"t_ns":5,"ev":"credit","tenant":"acme","region":"us","id":8,"balance":12}
`},
		{coordinator.Step{}, ""}, // a retry's: answered with the grant it had
	} {
		var got collected
		StepEvents(tc.step, 5, clock, &got)
		var b []byte
		for _, e := range got {
			b = e.AppendJSON(b)
		}
		if string(b) != tc.want {
			t.Errorf("step %d: wrote\n%s\nwant\n%s", i, b, tc.want)
		}
		for _, line := range strings.SplitAfter(string(b), "\n") {
			if _, err := ParseEvent([]byte(line)); line != "" && err != nil {
				t.Errorf("step %d: %q does not read back: %v", i, line, err)
			}
		}
	}
}
