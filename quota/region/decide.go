package region

import (
	"fmt"
	"time"

	"github.com/afloat/afloat/quota"
)

// Decision is the whole answer to one request, as DecideAt gives it: one
// value, read from one state of the tenant's bucket, so that a front's
// answer — the status, the balance, the Retry-After — never mixes two
// leases. Its zero value is a refusal with nothing known. A Decision is
// a value: safe to copy, and to read from any goroutine.
type Decision struct {
	// Allowed says the request was admitted: its cost is spent.
	Allowed bool
	// Remaining is the tenant's balance in the region after the decision,
	// under the lease in use (LeaseID); 0 without a valid lease, and 0 if
	// a renewal replaced that lease in the instant between the decision
	// and the read of its balance (its tokens then carry over to the new
	// lease, which the next decision reads).
	Remaining quota.Micro
	// RetryAfter is, for a refusal that may succeed later, when it may
	// (the rule is DecideAt's); 0 when admitted or Never. RetryKnown says
	// whether it is a promise (the next refill that fits, under the lease
	// in use) or only the bounded retry policy (when the region will next
	// ask the coordinator).
	RetryAfter time.Duration
	RetryKnown bool
	// Never says the request costs more than the tenant's quota can ever
	// hold in the region under its current limits: waiting will not help,
	// so a front answers "never" instead of a time to retry (Err says it
	// with the figures).
	Never bool
	// MaxCost is the most a request of the tenant's may cost and still be
	// admitted some day in the region — the newest grant's Ceiling, or the
	// emergency allowance if larger, in whole tokens; −1 while no grant
	// has said, and for a tenant not served. A request is Never exactly
	// when it costs more.
	MaxCost int64
	// LeaseID is the lease in use, valid at the decision's instant: the
	// one whose tokens Remaining counts and that admitted or refused the
	// request; 0 for none (the request was then refused, or admitted from
	// the emergency allowance). Rate and Burst are its shares of the
	// tenant's R and B, 0 for none.
	LeaseID     uint64
	Rate, Burst quota.Micro
	// Unknown says the limiter does not serve the tenant: refused, with
	// the retry policy's longest wait (Config.MaxRetryAfter).
	Unknown bool

	// What Err says, kept so that it formats only when asked.
	tenant, region string
	cost           int64
}

// Err is why the request can never be admitted as it is, for a front
// that answers that apart from a refusal with a time to retry: when
// Never, an error wrapping ErrTooLarge with the cost and the most the
// tenant's quota holds; when Unknown, one wrapping quota.ErrUnknownTenant;
// nil otherwise (admitted, or refused for now). It allocates only then.
func (d Decision) Err() error {
	switch {
	case d.Unknown:
		return fmt.Errorf("%w: %q is not served in region %q", quota.ErrUnknownTenant, d.tenant, d.region)
	case d.Never:
		return fmt.Errorf("%w: a cost of %d tokens; tenant %q's quota holds at most %d in region %q", ErrTooLarge, d.cost, d.tenant, d.MaxCost, d.region)
	}
	return nil
}

// Decide decides a request of cost tokens of tenant's quota now.
// Shorthand for DecideAt(l.Now(), tenant, cost); safe for concurrent use.
func (l *Limiter) Decide(tenant string, cost int64) Decision {
	return l.DecideAt(l.Now(), tenant, cost)
}

// DecideAt takes cost tokens of tenant's quota at now, or refuses, as
// AllowAt does (same rules, same counts), and returns the whole decision:
// what a front answers, taken from the one state of the bucket that
// decided — never from a second read that a renewal may have changed in
// between. It takes no lock and allocates nothing; safe for concurrent
// use.
//
// A refusal says when the request may succeed (RetryAfter): the earliest
// of the inputs the spec names that can be known —
//
//  1. the next local refill under the current lease that fits cost;
//  2. the activation of a confirmed new lease: a grant is put into use
//     the moment it arrives, so a confirmed lease is the current one and
//     its activation is 1;
//  3. the expected recovery of the coordinator: without 1, the next
//     renewal the region will try — while a request is unanswered, the
//     retry interval after it (doubling with each unanswered request);
//     else within HotInterval if the region holds a valid lease (a region
//     that refuses asks for more), within Retry if not.
//
// 1 is a promise: RetryKnown is true. 3 is an expectation, not a promise
// — the coordinator may not answer — so RetryKnown is false and
// RetryAfter is a bounded retry policy; when that ask is due or in flight
// it is the first retry interval (its answer is not here yet, and a
// client told 0 would come straight back to the same refusal). RetryAfter
// is capped at Config.MaxRetryAfter either way. A request that costs more
// than MaxCost is Never instead, with no time to retry.
func (l *Limiter) DecideAt(now int64, tenant string, cost int64) Decision {
	b := l.bucket(tenant)
	if b == nil {
		l.unknown.Add(1)
		return Decision{Unknown: true, RetryAfter: l.cfg.MaxRetryAfter, MaxCost: -1, tenant: tenant, region: l.cfg.Region, cost: cost}
	}
	ceil := b.ceil.Load()
	s, ok := b.spend(now, cost, ceil)
	d := Decision{Allowed: ok, MaxCost: ceil - 1, tenant: tenant, region: l.cfg.Region, cost: cost}
	now = s.at(now) // the instant the decision was made on s (spend)
	valid := s.valid(now)
	if valid {
		d.LeaseID, d.Rate, d.Burst = s.lease.ID, s.lease.Rate, s.lease.Burst
		d.Remaining = s.balance(now)
	}
	switch {
	case ok:
	case ceil != 0 && cost >= ceil:
		d.Never = true
	default:
		d.RetryAfter, d.RetryKnown = l.retryAfter(b, s, valid, now, cost)
	}
	return d
}

// retryAfter is a refusal's RetryAfter (DecideAt's rule) from s, the
// state that refused, and the bucket's ask hint: no lock.
func (l *Limiter) retryAfter(b *bucket, s *state, valid bool, now, cost int64) (time.Duration, bool) {
	if valid {
		if w, ok := s.waitFor(now, cost); ok {
			return min(time.Duration(w), l.cfg.MaxRetryAfter), true
		}
	}
	h := b.ask.Load()
	at := h >> 1
	if h&1 == 0 { // answered: the region asks again when it refuses, or has no lease
		if valid {
			at += int64(l.cfg.HotInterval)
		} else {
			at += int64(l.cfg.Retry)
		}
	}
	next := at - now
	if next <= 0 {
		next = int64(l.cfg.Retry)
	}
	return min(time.Duration(next), l.cfg.MaxRetryAfter), false
}

// noteAsk updates b.ask from the renewal bookkeeping it summarizes (the
// last request sent, whether it is answered, the failures before it), so
// that a decision reads the retry policy's input in one atomic load
// instead of taking b.mu, which renewals hold. Called under b.mu by
// whatever changes those (Request, Install).
//
// The word is an instant doubled, plus 1 while the last request is
// unanswered: then the instant is when it will be re-sent (the retry
// interval after it, doubled per failure); else it is when it was sent,
// and the decision adds HotInterval or Retry as the lease it read is
// valid or not. One word, so that a decision never mixes two renewals'
// figures; its zero value (answered at 0) is what a bucket that never
// asked would say, whether or not its numbering starts at 0.
func (l *Limiter) noteAsk(b *bucket) {
	at, pending := b.lastSend, int64(0)
	if b.answered < b.seq {
		at += int64(l.retryAfterFailures(b.failures))
		pending = 1
	}
	b.ask.Store(at<<1 | pending)
}
