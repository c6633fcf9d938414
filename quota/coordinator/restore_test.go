package coordinator

import (
	"errors"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

// restoreOverlap runs a restore of a backup that lacks a lease a region
// still spends, on one timeline (every core's clock reads the same here):
// A grants eu a lease after the backup, stops, and the backup is restored;
// B opens on it and us asks every 500 ms until it is granted. It returns
// how far the rate shares of eu's lease and us's first grant add up above
// R while both are live (0: they never overlap above R), and B.
// before says what B does with B before us asks (a successor, say).
func restoreOverlap(t *testing.T, before func(b *ledgered)) (quota.Micro, *ledgered) {
	t.Helper()
	l := NewMemLedger()
	a := newCore(t, l, 0)
	backup := l.Backup() // no lease in it yet
	eu := renew(t, a, time.Second, "eu", 0, 500)
	l.Restore(backup, 0, time.Unix(0, 0))
	b := newCore(t, l, 3*time.Second)
	if before != nil {
		before(b)
	}
	for now := 3 * time.Second; now < time.Minute; now += 500 * time.Millisecond {
		steps, err := b.Core.Expire(now)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range steps {
			if err := b.write(st); err != nil {
				t.Fatal(err)
			}
		}
		g, _, err := b.Renew(ctx, now, quota.Request{Tenant: "acme", Region: "us", Seq: seq(), Epoch: b.Epoch(), Demand: quota.Tokens(500)})
		if errors.Is(err, ErrRestoring) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if g.Lease.Activates >= eu.Lease.Expires {
			return 0, b
		}
		return max(0, g.Lease.Rate+eu.Lease.Rate-seedTenant().Rate), b
	}
	t.Fatal("us was never granted a lease")
	return 0, nil
}

// TestRestoreWaitsOutMissingLeases: a coordinator that restores a backup
// grants nothing until every lease the backup may lack has run out — eu's
// lease, granted after the backup, is never counted beside a grant to us
// above R — then clears the mark, so that its successor need not wait.
func TestRestoreWaitsOutMissingLeases(t *testing.T) {
	over, b := restoreOverlap(t, nil)
	if over > 0 {
		t.Fatalf("the restored coordinator granted us a share %v above R beside eu's lease the backup lacks", over)
	}
	until, waiting := b.Restoring()
	if waiting {
		t.Fatalf("step 1: still waiting after a grant (until %v)", until)
	}
	if until != 3*time.Second+seedTenant().LeaseDuration+seedTenant().Margin() {
		t.Fatalf("step 2: fenced until %v, want the take-over plus a lease and its margin", until)
	}
	succ := newCore(t, b.l, 20*time.Second)
	if _, waiting := succ.Restoring(); waiting {
		t.Fatal("step 3: the mark was cleared, yet the successor waits")
	}
}

// TestRestoreSuccessorWaitsInFull: a successor that takes over before the
// restored leader has cleared the mark waits a whole lease from its own
// take-over: it cannot know how long its predecessor waited. The
// restore's own figure (a lease raised after the backup) is waited too.
func TestRestoreSuccessorWaitsInFull(t *testing.T) {
	l := NewMemLedger()
	a := newCore(t, l, 0)
	backup := l.Backup()
	renew(t, a, time.Second, "eu", 0, 500)
	l.Restore(backup, 30*time.Second, time.Unix(0, 0))
	b := newCore(t, l, 3*time.Second)
	if until, waiting := b.Restoring(); !waiting || until != 33*time.Second {
		t.Fatalf("step 1: fenced until %v (%v), want 33s: the restore's 30 s", until, waiting)
	}
	succ := newCore(t, l, 8*time.Second)
	until, waiting := succ.Restoring()
	if !waiting || until != 38*time.Second {
		t.Fatalf("step 2: the successor is fenced until %v (%v), want 38s", until, waiting)
	}
	if _, _, err := succ.Renew(ctx, 37*time.Second, quota.Request{Tenant: "acme", Region: "us", Seq: seq(), Epoch: succ.Epoch()}); !errors.Is(err, ErrRestoring) {
		t.Fatalf("step 3: a renewal during the fence: %v, want ErrRestoring", err)
	}
	renew(t, succ, 38*time.Second, "us", 0, 500)
}

// TestRestoreDropsCredit: the backup's credit is not moved again — tokens
// returned after it may have gone to another region since — and the
// clear writes the credit down.
func TestRestoreDropsCredit(t *testing.T) {
	l := NewMemLedger()
	a := newCore(t, l, 0)
	eu := renew(t, a, 0, "eu", 0, 500)
	if err := a.Return(ctx, time.Second, quota.Return{Tenant: "acme", Region: "eu", LeaseID: eu.Lease.ID, Epoch: a.Epoch(), Balance: quota.Tokens(100)}); err != nil {
		t.Fatal(err)
	}
	if a.Credit("acme") == 0 {
		t.Fatal("step 1: the return credited nothing: the test tests nothing")
	}
	backup := l.Backup()
	l.Restore(backup, 0, time.Unix(0, 0))
	b := newCore(t, l, 2*time.Second)
	if cr := b.Credit("acme"); cr != 0 {
		t.Fatalf("step 2: the restored coordinator keeps credit %v", cr)
	}
	steps, err := b.Core.Expire(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		if err := b.write(st); err != nil {
			t.Fatal(err)
		}
	}
	snap := l.Backup().snap
	if snap.Restored != nil || snap.Credit["acme"] != 0 {
		t.Fatalf("step 3: after the fence the ledger keeps the mark %v and credit %v", snap.Restored, snap.Credit["acme"])
	}
}
