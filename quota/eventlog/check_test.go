package eventlog

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

const s = time.Second

// TestCheckerWindowIsExact: the one-pass window check against trying
// every window, on random admission logs.
func TestCheckerWindowIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for n := range 300 {
		c := NewChecker()
		c.Write(&Event{Kind: Start, Tenant: "t", Rate: 10 * quota.One, Burst: 5 * quota.One, N: 1, Why: "best-effort", Balance: 1000 * quota.One})
		type adm struct {
			t int64
			n int64
		}
		var log []adm
		at := int64(0)
		for range 1 + r.IntN(40) {
			at += int64(r.IntN(3)) * int64(50*time.Millisecond) // repeats instants
			k := int64(1 + r.IntN(4))
			log = append(log, adm{at, k})
			c.Write(&Event{T: at, Kind: Admit, Tenant: "t", Region: "x", N: k})
		}
		rep := c.Finish(at)
		want := math.Inf(-1)
		for i := range log {
			for j := i; j < len(log); j++ {
				if i > 0 && log[i-1].t == log[i].t {
					continue // a window starts before all admissions of its instant
				}
				var sum int64
				for _, a := range log[i : j+1] {
					sum += a.n
				}
				// every admission at log[j].t belongs to a window ending then
				for k := j + 1; k < len(log) && log[k].t == log[j].t; k++ {
					sum += log[k].n
				}
				want = math.Max(want, float64(sum)-10*float64(log[j].t-log[i].t)/1e9-5)
			}
		}
		if math.Abs(rep.WorstExcess-want) > 1e-9 {
			t.Fatalf("case %d: checker says %v, brute force %v: %v", n, rep.WorstExcess, want, log)
		}
	}
}

// TestCheckerCatches: hand-made logs of each way to break a promise.
func TestCheckerCatches(t *testing.T) {
	start := Event{Kind: Start, Tenant: "t", Rate: 10 * quota.One, Burst: 10 * quota.One, N: 2, Why: "hard"}
	lease := func(at int64, id, epoch uint64, region string, rate, burst float64, transfer float64) Event {
		return Event{T: at, Kind: Lease, Tenant: "t", Region: region, ID: id, Epoch: epoch,
			Rate: quota.Tokens(rate), Burst: quota.Tokens(burst), Transfer: quota.Tokens(transfer), Activates: at, Expires: at + int64(10*s)}
	}
	for i, tc := range []struct {
		events []Event
		want   string
	}{
		{[]Event{lease(0, 1, 1, "a", 5, 5, 0), lease(1, 1, 1, "b", 5, 5, 0)}, "lease 1 granted twice"},
		{[]Event{{T: 0, Kind: Restart, Epoch: 2}, lease(1, 1, 1, "a", 5, 5, 0)}, "after epoch 2 fenced"},
		{[]Event{lease(0, 1, 1, "a", 5, 5, 3)}, "only 0 were returned"},
		{[]Event{lease(0, 1, 1, "a", 6, 5, 0), lease(0, 2, 1, "b", 6, 5, 0)}, "rate shares sum to 12"},
		{[]Event{lease(0, 1, 1, "a", 5, 6, 0), lease(0, 2, 1, "b", 5, 6, 0)}, "burst shares and credit sum to 12"},
		{[]Event{{T: 0, Kind: Admit, Tenant: "t", Region: "a", N: 1}}, "without a lease"},
		{[]Event{lease(0, 1, 1, "a", 5, 5, 0), {T: 1, Kind: Install, Tenant: "t", Region: "b", ID: 1}}, "granted to a"},
		{[]Event{lease(0, 1, 1, "a", 5, 5, 0), {T: 1, Kind: Install, Tenant: "t", Region: "a", ID: 1}, {T: 2, Kind: End, ID: 1}, {T: 3, Kind: Supersede, Tenant: "t", Region: "a", ID: 1}}, "spent under lease 1"},
		{[]Event{lease(0, 1, 1, "a", 5, 5, 0), {T: 1, Kind: Install, Tenant: "t", Region: "a", ID: 1},
			{T: 1, Kind: Admit, Tenant: "t", Region: "a", N: 11}}, "11 tokens admitted"},
	} {
		c := NewChecker()
		c.Write(&start)
		for _, e := range tc.events {
			c.Write(&e)
		}
		rep := c.Finish(int64(20 * s))
		if rep.Violations == 0 || !strings.Contains(strings.Join(rep.Messages, "\n"), tc.want) {
			t.Errorf("step %d: %d violations %q, want one mentioning %q", i, rep.Violations, rep.Messages, tc.want)
		}
	}
}

// TestTransferMovesCreditAtActivation: credit moved into a lease stops
// counting as the lease starts to — one step of the coordinator's —
// though the log writes the lease's activation a nanosecond before its
// event, mapping the coordinator's clock: a lease of burst 7 with all 3
// of the credit moved in, beside another of 3, is within B = 10; a lease
// that moves less than it crowds out is not.
func TestTransferMovesCreditAtActivation(t *testing.T) {
	start := Event{Kind: Start, Tenant: "t", Rate: 10 * quota.One, Burst: 10 * quota.One, N: 2, Why: "hard"}
	for _, tc := range []struct {
		transfer   float64
		violations bool
	}{{3, false}, {2, true}} {
		c := NewChecker()
		for _, e := range []Event{
			start,
			{T: 0, Kind: Lease, Tenant: "t", Region: "b", ID: 1, Epoch: 1, Rate: 5 * quota.One, Burst: 3 * quota.One, Activates: 0, Expires: int64(10 * s)},
			{T: 0, Kind: Credit, Tenant: "t", Region: "a", Balance: 3 * quota.One},
			{T: int64(s) + 1, Kind: Lease, Tenant: "t", Region: "a", ID: 2, Epoch: 1, Rate: 5 * quota.One, Burst: 7 * quota.One,
				Transfer: quota.Tokens(tc.transfer), Activates: int64(s), Expires: int64(11 * s)},
		} {
			c.Write(&e)
		}
		rep := c.Finish(int64(20 * s))
		if (rep.Violations > 0) != tc.violations {
			t.Errorf("transfer %v: %d violations %q, want violations: %v", tc.transfer, rep.Violations, rep.Messages, tc.violations)
		}
	}
}

// TestRestartLive: a real coordinator killed between a write to its
// ledger and the line in its log loses the line, not the write. Its
// successor's restart says which leases it restored; an older lease not
// among them stops counting there, so a lost "end" cannot make the check
// see two leases of one share — and a lease the ledger still holds keeps
// counting. A successor on a ledger restored from a backup grants
// nothing for its fence (Event.Fence): a lease missing from its list
// counts until the fence's end, so a grant within it is seen beside it.
func TestRestartLive(t *testing.T) {
	start := Event{Kind: Start, Tenant: "t", Rate: 10 * quota.One, Burst: 10 * quota.One, N: 2, Why: "hard"}
	lease := func(at int64, id, epoch uint64, region string, rate float64) Event {
		return Event{T: at, Kind: Lease, Tenant: "t", Region: region, ID: id, Epoch: epoch,
			Rate: quota.Tokens(rate), Burst: quota.Tokens(rate), Activates: at, Expires: at + int64(10*s)}
	}
	run := func(live *[]uint64, fence ...time.Duration) Report {
		c := NewChecker()
		c.Write(&start)
		// Lease 1 (a, 6) was returned and ended in the ledger; its "end"
		// line was lost with its coordinator. The successor grants b 5.
		for _, e := range []Event{lease(0, 1, 1, "a", 6), {T: int64(s), Kind: Restart, Epoch: 2, Live: live, Fence: int64(sum(fence))}, lease(int64(2*s), 2, 2, "b", 5)} {
			// Through the log's own encoding, as afloat quota check reads it.
			line := e.AppendJSON(nil)
			got, err := ParseEvent(line)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			c.Write(&got)
		}
		return c.Finish(int64(20 * s))
	}
	if rep := run(&[]uint64{}); rep.Violations != 0 {
		t.Errorf("restored nothing: %q, want no violation", rep.Messages)
	}
	if rep := run(&[]uint64{1}); rep.Violations == 0 || !strings.Contains(strings.Join(rep.Messages, "\n"), "rate shares sum to 11") {
		t.Errorf("restored lease 1: %q, want it still counted", rep.Messages)
	}
	if rep := run(nil); rep.Violations == 0 { // the chaos harness's restarts say nothing of the ledger
		t.Errorf("no live list: %q, want lease 1 counted to its end", rep.Messages)
	}
	if rep := run(&[]uint64{}, 3*s); rep.Violations == 0 || !strings.Contains(strings.Join(rep.Messages, "\n"), "rate shares sum to 11") {
		t.Errorf("a restored ledger without lease 1, a grant within the fence: %q, want lease 1 counted to the fence's end", rep.Messages)
	}
	if rep := run(&[]uint64{}, s/2); rep.Violations != 0 {
		t.Errorf("a restored ledger without lease 1, a grant after the fence: %q, want no violation", rep.Messages)
	}
}

// TestUnloggedCover: a leader paused between sending a write and reading
// its answer wakes deposed; it cannot settle the write, so it neither
// logs nor answers its grant (lease 7), though etcd applied it. Its
// successor restores lease 7 from the ledger (restart, live) and covers
// the region's next renewal with it: no violation, counted in the report.
// A cover by a lease neither granted nor restored (8) is still one, and
// so is a region installing the unlogged lease, which no answer carried.
func TestUnloggedCover(t *testing.T) {
	start := Event{Kind: Start, Tenant: "t", Rate: 10 * quota.One, Burst: 10 * quota.One, N: 2, Why: "hard"}
	run := func(cover uint64, install bool) Report {
		c := NewChecker()
		events := []Event{start,
			{T: int64(s), Kind: Restart, Epoch: 2, Live: &[]uint64{7}},
			{T: int64(2 * s), Kind: Lease, Tenant: "t", Region: "a", ID: 9, Epoch: 2, Rate: 5 * quota.One, Burst: 5 * quota.One,
				Activates: int64(2 * s), Expires: int64(12 * s), Cover: cover},
		}
		if install {
			events = append(events, Event{T: int64(3 * s), Kind: Install, Tenant: "t", Region: "a", ID: 7, Epoch: 1})
		}
		for _, e := range events {
			line := e.AppendJSON(nil)
			got, err := ParseEvent(line)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			c.Write(&got)
		}
		return c.Finish(int64(20 * s))
	}
	if rep := run(7, false); rep.Violations != 0 || rep.UnloggedCovers != 1 {
		t.Errorf("covered by the restored, unlogged lease 7: %d violations %q, %d unlogged covers: want none, 1", rep.Violations, rep.Messages, rep.UnloggedCovers)
	}
	if rep := run(8, false); rep.Violations == 0 {
		t.Errorf("covered by lease 8, neither granted nor restored: no violation")
	}
	if rep := run(7, true); rep.Violations == 0 {
		t.Errorf("region a installed the unlogged lease 7: no violation")
	}
}

func sum(ds []time.Duration) (d time.Duration) {
	for _, x := range ds {
		d += x
	}
	return d
}

// TestCheckerTenantShrink: after a shrink the old limits hold while the
// leases granted before it count, the new ones after; an admission over
// the new bound after the transition is a violation, one within the old
// bound during it is not.
func TestCheckerTenantShrink(t *testing.T) {
	s := int64(time.Second)
	run := func(extra int64) Report {
		c := NewChecker()
		evs := []Event{
			{T: 0, Kind: Start, Tenant: "acme", Rate: 100 * quota.One, Burst: 100 * quota.One, N: 1, Why: "hard"},
			{T: 0, Kind: Lease, Tenant: "acme", Region: "eu", ID: 1, Epoch: 1, Rate: 100 * quota.One, Burst: 100 * quota.One, Activates: 0, Expires: 10 * s},
			{T: 0, Kind: Install, Tenant: "acme", Region: "eu", ID: 1},
			{T: 1 * s, Kind: Tenant, Tenant: "acme", Rate: 10 * quota.One, Burst: 10 * quota.One, N: 1, Mode: "hard", Why: "update", By: "alice"},
		}
		// During the transition the old lease is spent at the old R.
		for k := int64(1); k <= 9; k++ {
			evs = append(evs, Event{T: k * s, Kind: Admit, Tenant: "acme", Region: "eu", N: 100})
		}
		evs = append(evs,
			Event{T: 10 * s, Kind: Expire, Tenant: "acme", Region: "eu", ID: 1},
			Event{T: 10 * s, Kind: Lease, Tenant: "acme", Region: "eu", ID: 2, Epoch: 1, Rate: 10 * quota.One, Burst: 10 * quota.One, Activates: 10 * s, Expires: 30 * s},
			Event{T: 10 * s, Kind: Install, Tenant: "acme", Region: "eu", ID: 2})
		// After it, at the new R: [11 s, 20 s] may admit 10·9 + 10 = 100.
		for k := int64(11); k <= 20; k++ {
			n := int64(10)
			if k == 20 {
				n += extra
			}
			evs = append(evs, Event{T: k * s, Kind: Admit, Tenant: "acme", Region: "eu", N: n})
		}
		for _, e := range evs {
			c.Write(&e)
		}
		return c.Finish(21 * s)
	}
	if r := run(0); r.Violations != 0 {
		t.Fatalf("within the bound: %d violations: %v", r.Violations, r.Messages)
	}
	r := run(1)
	if r.Violations == 0 || !strings.Contains(r.Messages[0], "R·Δ + B is 100 ") {
		t.Fatalf("one token over the new bound: %+v", r)
	}
	// Without the old limits' hold the transition's 900 would break the
	// new bound: the hold is what lets it pass, and it ends.
	c := NewChecker()
	for _, e := range []Event{
		{T: 0, Kind: Start, Tenant: "acme", Rate: 100 * quota.One, Burst: 100 * quota.One, N: 1, Why: "hard"},
		{T: 1 * s, Kind: Tenant, Tenant: "acme", Rate: 10 * quota.One, Burst: 10 * quota.One, N: 1, Mode: "hard", Why: "update"},
		{T: 1 * s, Kind: Lease, Tenant: "acme", Region: "eu", ID: 1, Epoch: 1, Rate: 100 * quota.One, Burst: 100 * quota.One, Activates: s, Expires: 10 * s},
	} {
		c.Write(&e)
	}
	if r := c.Finish(11 * s); r.Violations == 0 {
		t.Fatal("a lease of the old R granted after the shrink passed the invariants")
	}
}

// TestCheckerTenantStarts: a start event of a changed tenant is a
// process's config file, not checked; one of an unchanged tenant still
// must match.
func TestCheckerTenantStarts(t *testing.T) {
	c := NewChecker()
	c.Write(&Event{T: 0, Kind: Start, Tenant: "acme", Rate: quota.One, Burst: quota.One, N: 1, Why: "hard"})
	c.Write(&Event{T: 1, Kind: Start, Tenant: "acme", Rate: 2 * quota.One, Burst: quota.One, N: 1, Why: "hard"})
	if r := c.Finish(2); r.Violations != 1 {
		t.Fatalf("a different start of an unchanged tenant: %d violations", r.Violations)
	}
	c = NewChecker()
	c.Write(&Event{T: 0, Kind: Tenant, Tenant: "acme", Rate: quota.One, Burst: quota.One, N: 1, Mode: "hard", Why: "create"})
	c.Write(&Event{T: 1, Kind: Start, Tenant: "acme", Rate: 2 * quota.One, Burst: quota.One, N: 1, Why: "hard"})
	if r := c.Finish(2); r.Violations != 0 {
		t.Fatalf("a config file's start of a changed tenant: %v", r.Messages)
	}
}

// TestSpending: a region spends under a lease from its install until it
// stops (superseded, expired, returned), as the checker follows it; an
// admission outside that is one without a lease.
func TestSpending(t *testing.T) {
	c := NewChecker()
	for i, step := range []struct {
		e    Event
		want bool
	}{
		{Event{T: 0, Kind: Start, Tenant: "t", Rate: 10 * quota.One, Burst: 10 * quota.One, N: 1, Why: "best-effort"}, false},
		{Event{T: 1, Kind: Lease, Tenant: "t", Region: "a", ID: 1, Epoch: 1, Rate: quota.One, Burst: quota.One, Activates: 1, Expires: int64(s)}, false},
		{Event{T: 2, Kind: Install, Tenant: "t", Region: "a", ID: 1}, true},
		{Event{T: 3, Kind: Admit, Tenant: "t", Region: "a", N: 1}, true},
		{Event{T: 4, Kind: Return, Tenant: "t", Region: "a", ID: 1}, false},
		{Event{T: 5, Kind: Admit, Tenant: "t", Region: "a", N: 1}, false},
	} {
		c.Write(&step.e)
		if got := c.Spending("t", "a"); got != step.want {
			t.Errorf("step %d: after %v, Spending = %v, want %v", i, step.e.Kind, got, step.want)
		}
	}
	if c.Spending("t", "b") || c.Spending("u", "a") {
		t.Error("a region or tenant the log never named is spending")
	}
	if rep := c.Finish(6); rep.Violations != 0 || rep.NoLeaseAdmitted != 1 {
		t.Errorf("report %+v: want no violation, 1 token admitted without a lease", rep)
	}
}
