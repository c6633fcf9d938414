package coordinator

import (
	"errors"
	"fmt"
	"time"

	"github.com/afloat/afloat/quota"
)

// ErrRestoring: the ledger was restored from a backup, and the
// coordinator grants nothing until every lease that could still be in
// use, and that the backup may not hold, has run out. Ask again later.
var ErrRestoring = errors.New("coordinator: the ledger was restored from a backup; no grant until the leases it may lack have run out")

// Restored marks a ledger that was restored from a backup (Snapshot.Restored).
//
// Why a fence. A backup holds the ledger as of when it was taken. Leases
// granted after it are not in it, yet a region may still spend one when
// the restored ledger is read: a coordinator that counted only the
// backup's leases could grant their share a second time. No coordinator
// can tell from a restored ledger which leases it lacks — that is what a
// restore loses — so the restored leader grants nothing until the longest
// of them must have ended: every such lease was granted before the
// restore, hence before the leader took over, and a region stops spending
// a lease at most its duration and skew margin after the coordinator
// granted it. The mark is written by the restore (etcdledger.Restore,
// MemLedger.Restore) in the same step as the data, and cleared by the
// leader that has waited (ClearRestored) in the same transaction as its
// first grant may be: a successor that takes over before the clear waits
// in full again from its own take-over, since it cannot know how long its
// predecessor had waited.
type Restored struct {
	// Wait is the longest lease (duration and margin) the restore knew
	// of, beyond the tenants' own (the coordinator waits the longer): a
	// tenant's lease duration may have been raised after the backup.
	Wait time.Duration `json:"wait"`
	// At is when the restore was made (Unix nanoseconds), for people.
	At int64 `json:"at"`
}

// fenceFor is how long a coordinator that restores snap must wait before
// it grants: the longest lease of any tenant it knows of — the ledger's,
// the config file's, the tenants its leases name — and the restore's own
// figure. 0 when snap was not restored.
func (c *Core) fenceFor(snap Snapshot, cfg Config) time.Duration {
	if snap.Restored == nil {
		return 0
	}
	d := snap.Restored.Wait
	for _, ts := range c.tenants {
		if ts.t.LeaseDuration > 0 {
			d = max(d, ts.t.LeaseDuration+ts.t.Margin())
		}
	}
	for _, t := range cfg.Tenants {
		t = t.WithDefaults()
		d = max(d, t.LeaseDuration+t.Margin())
	}
	for _, l := range snap.Leases {
		d = max(d, l.Expires-l.Activates)
	}
	if d == 0 {
		// A restore that knew of no tenant at all still waits a default
		// lease.
		d = quota.DefaultLeaseDuration + quota.DefaultSkewMargin
	}
	return d
}

// restoring refuses a grant while the fence stands.
func (c *Core) restoring(now time.Duration) error {
	if c.broken.noRestoreFence() || now >= c.fenceUntil {
		return nil
	}
	return fmt.Errorf("%w (for %v more)", ErrRestoring, (c.fenceUntil - now).Round(time.Millisecond))
}

// Restoring reports whether the coordinator still waits out a restore,
// and until when.
func (c *Core) Restoring() (until time.Duration, waiting bool) {
	return c.fenceUntil, c.unfence
}

// unfenceStep is the step that ends the fence once it has passed: it
// clears the mark, and writes the credit the restore dropped (New keeps
// none: tokens returned after the backup may have been moved to another
// region since, and moving the backup's credit again would spend them
// twice; dropping them is temporary under-use, as the spec prefers).
func (c *Core) unfenceStep(now time.Duration) (Step, bool) {
	if !c.unfence || now < c.fenceUntil {
		return Step{}, false
	}
	c.unfence = false
	x := Step{Ops: []Op{{Kind: ClearRestored}}}
	for _, name := range c.dropped {
		// What returns during the fence credited, if any: the backup's
		// is gone.
		var cr quota.Micro
		if ts := c.tenants[name]; ts != nil {
			cr = ts.credit
		}
		x.Ops = append(x.Ops, Op{Kind: SetCredit, Tenant: name, Credit: cr})
	}
	c.dropped = nil
	return x, true
}
