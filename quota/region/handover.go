package region

import (
	"fmt"
	"time"

	"github.com/afloat/afloat/quota"
)

// Handover: an agent's leases passed on to the agent that replaces it.
//
// A region's agent that stops gives its leases back (or detaches), and
// its successor starts with none: with 100,000 tenants in the region,
// every one a first lease — a ledger write each — so a rolling restart
// left the region refusing for as long as the coordinator took to write
// them (docs/benchmarks.md, "The quota at scale"). A handover keeps them:
// the stopping agent takes every lease out of use, as it would to give
// it back, but gives nothing back, and leaves its successor which lease
// of each tenant it held (Handover), with its incarnation. The successor
// renews as that incarnation, each tenant's first request naming the
// lease handed over (quota.Request.Resumed), and the coordinator answers
// as it answers a region's ordinary renewal: a lease covered by the
// handed one's record, with no write, where nothing else changes.
//
// Why the bound holds. The coordinator cannot tell the successor from
// its predecessor, and need not: one incarnation spends at a time,
// because the predecessor stopped spending before it wrote the handover
// (Run takes every lease out of use first), and the successor spends
// only under leases it installs afterwards. A region that holds lease H
// and asks again is what the coordinator's sums already allow for; the
// successor's new lease starts with an empty bucket (no balance is
// handed over), so between them the two processes admit no more than
// one that ran on would have. What the handover must never be is read
// twice: two successors would spend under one incarnation at once. The
// agent takes the file before it reads it (quota/agent), and writes one
// only after its own spending stopped.

// Handover is what a limiter's Run leaves when it stops WithHandover: the
// lease each tenant held, taken out of use and not given back. Its agent
// hands it, with the incarnation it renewed as, to the next agent of the
// region (Limiter.Resume).
type Handover struct {
	Region string        `json:"region"`
	Leases []HandedLease `json:"leases"`
}

// HandedLease is a tenant's lease in a Handover.
type HandedLease struct {
	Tenant string `json:"tenant"`
	Lease  uint64 `json:"lease"`
	Epoch  uint64 `json:"epoch"`
	// Left is how long the lease had to run when it was handed over (to
	// Resume: when it is resumed; 0 or less for over, or not known). The
	// next limiter renews the leases that end soonest first: those it
	// renews after they end cost a ledger write each.
	Left time.Duration `json:"left_ns"`
}

// WithHandover has Run, when ctx ends, let the calls under way be
// answered (each within its patience) and install what they grant, then
// take every valid lease out of use and record it given back
// (Journal.Returned) — the region spends nothing more — but give none
// back and end none at the coordinator:
// it puts them in *h instead, for the region's next agent (Resume). The
// coordinator counts them until they end or the next agent renews them.
// Returns already queued for leases replaced earlier are not sent
// either. WithExit is ignored with it.
func WithHandover(h *Handover) RunOption { return func(o *runOptions) { o.handover = h } }

// Resume makes h, left by the region's previous agent (WithHandover),
// this limiter's starting point: each tenant's next request names the
// lease handed over (quota.Request.Resumed), which the coordinator
// renews as it would for the agent that held it. Until a lease of its
// own is installed a tenant admits nothing (hard) or its fallback: the
// leases handed over are not in use here. Call it before Run, on a
// limiter that has asked for nothing yet, with the incarnation the
// handover came with (the coordinator answers no other). Tenants not
// served here are skipped; it returns how many leases it took up.
func (l *Limiter) Resume(h Handover) (int, error) {
	if h.Region != l.cfg.Region {
		return 0, fmt.Errorf("%w: region: a handover of region %q resumed in region %q", quota.ErrConfig, h.Region, l.cfg.Region)
	}
	if l.running.Load() {
		return 0, ErrRunning
	}
	n := 0
	for _, hl := range h.Leases {
		b := l.bucket(hl.Tenant)
		if b == nil || hl.Lease == 0 {
			continue
		}
		b.mu.Lock()
		if b.held == 0 && b.seq == b.seq0 {
			b.resumed, b.resumedUntil = hl.Lease, 0
			if hl.Left > 0 {
				b.resumedUntil = l.Now() + int64(hl.Left)
			}
			b.epoch = max(b.epoch, hl.Epoch)
			atomicMax(&l.epochHigh, b.epoch)
			n++
		}
		b.mu.Unlock()
	}
	return n, nil
}

// handedOver takes tenant's valid lease out of use, as giveBack does, for
// a handover: the lease and the epoch to hand on.
func (l *Limiter) handedOver(now int64, tenant string, b *bucket) (quota.Return, HandedLease, bool) {
	until := b.cur.Load().until // Run alone installs, and it is here
	ret, ok := l.giveBack(now, tenant, b)
	if !ok {
		return quota.Return{}, HandedLease{}, false
	}
	return ret, HandedLease{Tenant: tenant, Lease: ret.LeaseID, Epoch: ret.Epoch, Left: time.Duration(until - now)}, true
}
