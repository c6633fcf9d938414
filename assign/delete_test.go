package assign

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/afloat/afloat/assign/internal/lua"
)

// scanPool lists the keys of pool name on c's server: every key under its
// hash tag, by SCAN, as an operator would look.
func scanPool(t *testing.T, c rueidis.Client, name string) []string {
	t.Helper()
	var keys []string
	cursor := uint64(0)
	for {
		e, err := c.Do(context.Background(), c.B().Scan().Cursor(cursor).Match(lua.PoolKeys(name).Prefix+"*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, e.Elements...)
		if cursor = e.Cursor; cursor == 0 {
			slices.Sort(keys)
			return keys
		}
	}
}

// TestDeleteLeavesNothing: a pool that used everything it has — a creator,
// weights, a request id's record, a failure's, a sticky key's, a cooldown,
// a rate limit, a cap and a lease open, settings — is gone after Delete,
// down to the records by id, on a server of 3,000 other keys (the sweep
// takes several steps): no key under its hash tag is left but those of the
// least-in-flight Leases of the same name, which still works, and a pool
// whose name starts with the same letters keeps all of its keys.
func TestDeleteLeavesNothing(t *testing.T) {
	srv, c := newClient(t)
	ctx := ctxFor(t)
	cmds := make(rueidis.Commands, 0, 3000)
	for i := range 3000 {
		cmds = append(cmds, c.B().Set().Key("other:"+strconv.Itoa(i)).Value("x").Build())
	}
	for _, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
	p := newPool(t, c, "gone")
	neighbour := newPool(t, c, "gone:too")
	l, _ := NewLeases(wrap(t, c), "gone")
	if ok, err := p.Create(ctx, "tester", 0, "a", "b", "c"); !ok || err != nil {
		t.Fatalf("create: %v %v", ok, err)
	}
	_, err1 := p.AddWeighted(ctx, 3, AtMinimum, "w")
	_, err2 := p.PickID(ctx, "order-1")
	_, err3 := p.PickBatchIDs(ctx, []string{"order-2", "order-3"})
	_, err4 := p.PickSticky(ctx, "session-1")
	_, err5 := p.RecordFailureID(ctx, "failure-1", "a", 0)
	_, err6 := p.CooldownFor(ctx, time.Hour, "b")
	err7 := p.SetLimit(ctx, Limit{Rate: 5, Per: time.Second, Burst: 5}, "c")
	err8 := p.SetConcurrency(ctx, 2, "w")
	_, err9 := p.PickLease(ctx, time.Hour)
	err10 := p.SetSettings(ctx, Settings{EvictAfter: 3})
	_, err11 := neighbour.Add(ctx, 0, "x")
	_, err12 := neighbour.PickID(ctx, "order-1")
	_, err13 := l.Add(ctx, "w1")
	_, err14 := l.PickLeastInFlight(ctx, time.Hour)
	if err := errors.Join(err1, err2, err3, err4, err5, err6, err7, err8, err9, err10, err11, err12, err13, err14); err != nil {
		t.Fatal(err)
	}
	k := lua.PoolKeys("gone")
	for _, want := range []string{k.ReqPrefix + "order-1", k.ReqPrefix + "order-3", k.FailReqPrefix + "failure-1", k.StickyPrefix + "session-1", k.Owner, k.Meta, k.PoolLeases} {
		if !slices.Contains(scanPool(t, c, "gone"), want) {
			t.Fatalf("before Delete, no key %s: the test does not reach what it must", want)
		}
	}
	neighbours := scanPool(t, c, "gone:too")

	if err := p.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	leases := []string{k.Inflight, k.Leases, k.LeaseMembers, k.LeaseSeq}
	slices.Sort(leases)
	if left := scanPool(t, c, "gone"); fmt.Sprint(left) != fmt.Sprint(leases) {
		t.Errorf("keys of the pool left after Delete: %q, want only the least-in-flight variant's %q", left, leases)
	}
	if got := scanPool(t, c, "gone:too"); fmt.Sprint(got) != fmt.Sprint(neighbours) {
		t.Errorf("the neighbour pool's keys: %q, want them untouched: %q", got, neighbours)
	}
	if n := srv.MustDo("DBSIZE"); n != ":"+strconv.Itoa(3000+len(leases)+len(neighbours)) {
		t.Errorf("DBSIZE %s after Delete, want the 3,000 others, the leases' and the neighbour's", n)
	}
	if _, err := p.Pick(ctx); !errors.Is(err, ErrUnknownPool) {
		t.Errorf("pick after Delete: %v, want ErrUnknownPool", err)
	}
	if _, err := l.PickLeastInFlight(ctx, time.Hour); err != nil {
		t.Errorf("the least-in-flight leases after the pool's Delete: %v", err)
	}
	if err := p.Delete(ctx); err != nil {
		t.Errorf("Delete of a pool deleted already: %v", err)
	}
}
