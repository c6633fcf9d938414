package coordinator

import (
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

// ask proposes a renewal of region holding lease holding, and writes and
// acknowledges the step; it returns the step (what was written) and the
// grant.
func ask(t *testing.T, c *ledgered, now time.Duration, region string, holding uint64, demand float64) (Step, quota.Grant) {
	t.Helper()
	step, err := c.Core.Renew(now, quota.Request{Tenant: "acme", Region: region, Seq: seq(), Holding: holding, Epoch: c.Epoch(), Demand: quota.Tokens(demand)})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.commit(step)
	if err != nil {
		t.Fatal(err)
	}
	return step, a.Grant
}

func puts(s Step) int {
	n := 0
	for _, op := range s.Ops {
		if op.Kind == PutLease {
			n++
		}
	}
	return n
}

// TestWritesFollowChange: a tenant over its limit in every region. Once the
// shares have settled, a region that asks again with the same demand is
// answered with the lease it holds, Unchanged, and nothing is written —
// until a quarter of the lease has passed (the end must move: a covered
// lease, still not written) or its share changes (written); the
// invariants hold throughout.
func TestWritesFollowChange(t *testing.T) {
	c := newCore(t, NewMemLedger(), 0)
	ms := time.Millisecond
	held := map[string]uint64{}
	for _, at := range []time.Duration{0, 100 * ms, 200 * ms} {
		for _, r := range []string{"eu", "us", "ap"} {
			_, g := ask(t, c, at, r, held[r], 400)
			held[r] = g.Lease.ID
		}
	}
	invariants(t, c)
	// Settled: each holds a third of R, its target; the next asks of each
	// confirm the last lease (and end the older ones: a write of ends).
	_, g := ask(t, c, 300*ms, "eu", held["eu"], 400)
	if g.Short || g.Lease.Rate < 160*quota.One {
		t.Fatalf("eu: %v short %v, want a settled third of R", g.Lease.Rate, g.Short)
	}
	held["eu"] = g.Lease.ID
	activated := g.Lease.Activates // the lease's, also when it was kept
	for i, at := 0, 400*ms; at < activated+c.tenants["acme"].t.LeaseDuration/keepFor; i, at = i+1, at+250*ms {
		step, g := ask(t, c, at, "eu", held["eu"], 400)
		if !g.Unchanged || g.Lease.ID != held["eu"] || len(step.Ops) != 0 || g.Short {
			t.Fatalf("step %d: at %v eu got lease %d (unchanged %v, short %v) with %d ops written, want lease %d unchanged and nothing written",
				i, at, g.Lease.ID, g.Unchanged, g.Short, len(step.Ops), held["eu"])
		}
		invariants(t, c)
	}
	// A quarter of the lease on: a renewal, covered — a new lease, the
	// same shares, nothing written (cover.go).
	at := activated + c.tenants["acme"].t.LeaseDuration/keepFor
	step, g := ask(t, c, at, "eu", held["eu"], 400)
	if g.Unchanged || !step.Covered || puts(step) != 0 || g.Lease.ID <= held["eu"] {
		t.Fatalf("at %v, a quarter lease on: eu got lease %d unchanged %v covered %v with %d leases written, want a new one covered",
			at, g.Lease.ID, g.Unchanged, step.Covered, puts(step))
	}
	held["eu"] = g.Lease.ID
	// Its share changes (its demand falls): a new lease at once.
	step, g = ask(t, c, at+100*ms, "eu", held["eu"], 50)
	if g.Unchanged || puts(step) != 1 || g.Lease.Rate >= 160*quota.One {
		t.Fatalf("eu's demand fell: got lease %d of %v unchanged %v with %d written, want a smaller one written", g.Lease.ID, g.Lease.Rate, g.Unchanged, puts(step))
	}
	invariants(t, c)
	// A region holding an older lease than the newest acknowledged (a
	// grant lost on its way) gets a new one, not an Unchanged answer.
	old := held["eu"]
	held["eu"] = g.Lease.ID
	_, g = ask(t, c, at+200*ms, "eu", old, 50)
	if g.Unchanged {
		t.Fatalf("eu holding lease %d, older than its newest %d, was answered unchanged", old, held["eu"])
	}
}

// TestRoomIsSignalled: a region refusing at its fair share is not told to
// ask again; one that falls short is (Grant.Short), and the return that
// frees the share nudges it.
func TestRoomIsSignalled(t *testing.T) {
	c := newCore(t, NewMemLedger(), 0)
	ms := time.Millisecond
	_, us := ask(t, c, 0, "us", 0, 400)
	if us.Short {
		t.Fatal("us, alone with demand, falls short")
	}
	_, eu := ask(t, c, 10*ms, "eu", 0, 400)
	if !eu.Short || eu.Lease.Rate > 100*quota.One {
		t.Fatalf("eu got %v, short %v, while us holds %v: want a small lease, short", eu.Lease.Rate, eu.Short, us.Lease.Rate)
	}
	// us learns its smaller target, installs it and returns the old
	// lease: the return frees share, and eu, refusing, is nudged.
	_, us2 := ask(t, c, 20*ms, "us", us.Lease.ID, 400)
	step, err := c.Core.Return(30*ms, quota.Return{Tenant: "acme", Region: "us", LeaseID: us.Lease.ID, Epoch: c.Epoch()})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.commit(step)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Nudges) != 1 || a.Nudges[0].Region != "eu" {
		t.Fatalf("the return of us's lease nudged %v, want eu", a.Nudges)
	}
	_, eu2 := ask(t, c, 40*ms, "eu", eu.Lease.ID, 400)
	if eu2.Short || eu2.Lease.Rate < 200*quota.One {
		t.Fatalf("eu, nudged, got %v short %v; want its half, not short", eu2.Lease.Rate, eu2.Short)
	}
	invariants(t, c)
	// Both at their fair share: us asking again is kept, and nudges nobody.
	step, us3 := ask(t, c, 50*ms, "us", us2.Lease.ID, 400)
	if !us3.Unchanged || us3.Short || len(step.Ops) != 0 {
		t.Fatalf("us at its fair share asked again: unchanged %v short %v, %d ops; want its lease kept, nothing written", us3.Unchanged, us3.Short, len(step.Ops))
	}
}
