package assign

import (
	"errors"
	"testing"
)

// TestCreateOwnerReset: Create makes a pool only from nothing and records
// its creator; a pool made by Add, or holding only failure records, has
// none and is never made again over; Reset empties and refills only the
// creator's pool, and refuses anyone else's, changing nothing.
func TestCreateOwnerReset(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)

	mine := newPool(t, c, "mine")
	if ok, err := mine.Create(ctx, "lab", 0, "a", "b"); !ok || err != nil {
		t.Fatalf("create from nothing: %v %v", ok, err)
	}
	if o, err := mine.owner(ctx); o != "lab" || err != nil {
		t.Errorf("owner: %q %v", o, err)
	}
	if ok, err := mine.Create(ctx, "lab", 0, "c"); ok || err != nil {
		t.Errorf("create over a pool: %v %v, want false", ok, err)
	}
	mine.Pick(ctx)
	mine.RecordFailure(ctx, "a", 0)
	if err := mine.Reset(ctx, "lab", 0, "x", "y", "z"); err != nil {
		t.Fatal(err)
	}
	ms, _ := mine.list(ctx)
	if len(ms) != 3 || ms[0].Name != "x" || ms[0].Count != 0 || ms[0].Failures != 0 {
		t.Errorf("after reset: %+v", ms)
	}
	if err := mine.Reset(ctx, "someone else", 0, "q"); !errors.Is(err, ErrNotOwner) {
		t.Errorf("reset by another: %v, want ErrNotOwner", err)
	}

	// A worker's pool (Add) and one with only failure records: no
	// creator, never created over, never reset.
	theirs := newPool(t, c, "theirs")
	theirs.Add(ctx, 5, "p1")
	failures := newPool(t, c, "failures-only")
	failures.RecordFailure(ctx, "p9", 0)
	for i, p := range []*Pool{theirs, failures} {
		if o, err := p.owner(ctx); o != "" || err != nil {
			t.Errorf("step %d: owner of a pool Create did not make: %q %v", i, o, err)
		}
		if ok, err := p.Create(ctx, "lab", 0, "a"); ok || err != nil {
			t.Errorf("step %d: create over it: %v %v, want false", i, ok, err)
		}
		if err := p.Reset(ctx, "lab", 0, "a"); !errors.Is(err, ErrNotOwner) {
			t.Errorf("step %d: reset: %v, want ErrNotOwner", i, err)
		}
	}
	if ms, err := theirs.list(ctx); err != nil || len(ms) != 1 || ms[0].Count != 5 {
		t.Errorf("the worker's pool after: %+v %v", ms, err)
	}
	if n, err := c.Do(ctx, c.B().Hlen().Key(failures.k.Failures).Build()).AsInt64(); n != 1 || err != nil {
		t.Errorf("the failure records after: %d %v", n, err)
	}

	// Delete takes the creator too: the name is free for anyone.
	if err := mine.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if o, _ := mine.owner(ctx); o != "" {
		t.Errorf("owner after delete: %q", o)
	}
	if _, err := mine.Create(ctx, "", 0, "a"); !errors.Is(err, ErrInvalid) {
		t.Errorf("an empty owner: %v", err)
	}
}
