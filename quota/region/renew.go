package region

import (
	"fmt"
	"time"

	"github.com/afloat/afloat/quota"
)

// Request builds the tenant's next request to the coordinator, and
// records when it was sent: the lease that answers it ends ValidFor −
// Margin after now, on this clock. Demand is what was offered since the
// previous request, per second.
func (l *Limiter) Request(now int64, tenant string) (quota.Request, error) {
	b := l.bucket(tenant)
	if b == nil {
		return quota.Request{}, fmt.Errorf("%w: %q is not served in region %q", quota.ErrUnknownTenant, tenant, l.cfg.Region)
	}
	return l.request(now, b), nil
}

// request is Request for a bucket in hand (Run's schedule holds them):
// a lookup of its tenant by name fewer, of the four or so a renewal
// cost an agent.
func (l *Limiter) request(now int64, b *bucket) quota.Request {
	tenant := b.name
	b.mu.Lock()
	defer b.mu.Unlock()
	defer l.noteAsk(b) // for decisions, which read no field under mu
	offered := b.offeredSince(true)
	b.offeredAcc += offered
	b.hot.Store(false)
	var demand quota.Micro = -1 // unknown on the first request
	if b.reported && now > b.lastReport {
		demand = quota.Micro(float64(offered) * float64(quota.One) * 1e9 / float64(now-b.lastReport))
	} else if b.reported {
		demand = 0
	}
	b.reported, b.lastReport = true, now
	if demand >= 0 {
		b.demand = demand
	}
	if b.seq > b.seq0 && b.answered < b.seq {
		b.failures++ // the previous request is still unanswered
	}
	b.seq++
	atomicMax(&l.seqHigh, b.seq)
	if l.cfg.Jitter > 0 {
		b.jitter = l.draw(tenant, b.seq) * l.cfg.Jitter
	}
	b.sent[b.seq%uint64(len(b.sent))] = sentReq{b.seq, now}
	b.lastSend = now
	b.nudged = false
	s := b.cur.Load()
	var bal quota.Micro
	if s.valid(now) {
		bal = s.balance(now)
	}
	holding, resumed := b.held, false
	if holding == 0 && b.resumed != 0 {
		holding, resumed = b.resumed, true
	}
	return quota.Request{
		Tenant: tenant, Region: l.cfg.Region, Seq: b.seq,
		Holding: holding, Resumed: resumed, Epoch: b.epoch, Demand: demand, Balance: bal,
	}
}

// draw is a uniform draw in [0, 1) for tenant's request seq. It is a
// counter-based generator — splitmix64's mixer over Config.Seed, the
// region, the tenant and seq — so that the limiter reads no global random
// source and keeps no generator state: its waits follow from its config
// and the calls made to it, and regions and tenants draw apart under one
// seed.
func (l *Limiter) draw(tenant string, seq uint64) float64 {
	const fnvOffset, fnvPrime = 14695981039346656037, 1099511628211
	h := uint64(fnvOffset)
	for _, s := range [...]string{l.cfg.Region, "\x00", tenant} {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * fnvPrime
		}
	}
	return float64(mix64(mix64(l.cfg.Seed^h)+seq)>>11) / (1 << 53)
}

// mix64 is splitmix64's step: a bijection of 64-bit words whose outputs
// for consecutive inputs pass as independent.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Nudge records the coordinator's request to renew soon.
func (l *Limiter) Nudge(n quota.Nudge) {
	b := l.bucket(n.Tenant)
	if b == nil || n.Region != l.cfg.Region {
		return
	}
	b.mu.Lock()
	if n.Epoch >= b.epoch {
		b.nudged = true
	}
	b.mu.Unlock()
	l.up.push(b)
	l.poke()
}

// Due says whether the tenant should send a request now: it has no valid
// lease, half its lease has passed, it was nudged, or it is refusing and
// asking may get it more (at most every HotInterval) — and no request is
// waiting for an answer, unless that one has waited the retry interval.
// A request whose call Run saw fail as a whole waits for nothing: the
// tenant is due by the other rules, and Run's backoff, the region's,
// says when it asks again. Run moves the half-lease renewal of each lease
// it installs by up to half of Config.Spread of a lease either way.
//
// A region that refuses asks early only when its last answer said its
// lease falls short of its target (quota.Grant.Short: other regions hold
// the rest and were nudged to give it up) or when its demand has doubled
// since it last reported it (its target grows with it). Otherwise it
// already holds its fair part of a tenant over its limit: asking again
// would change nothing, so it asks at half a lease, as every region does,
// and sooner only when the coordinator nudges it because share was freed.
func (l *Limiter) Due(now int64, tenant string) bool {
	b := l.bucket(tenant)
	return b != nil && l.due(now, b)
}

// due is Due for a bucket in hand.
func (l *Limiter) due(now int64, b *bucket) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seq == b.seq0 {
		return true // never asked
	}
	since := now - b.lastSend
	if b.answered < b.seq && b.lost != b.seq {
		// Waiting for an answer: re-send after the retry interval, which
		// doubles while the coordinator stays silent.
		return since >= int64(float64(l.retryAfterFailures(b.failures))*(1+b.jitter))
	}
	s := b.cur.Load()
	switch {
	case !s.valid(now):
		return since >= int64(l.cfg.Retry)
	case b.nudged:
		return true
	case b.hot.Load() && since >= int64(l.cfg.HotInterval) &&
		(b.short || float64(b.offeredSince(false))*float64(quota.One)*1e9/float64(since) > 2*float64(b.demand)):
		return true
	case since >= 4*int64(l.cfg.HotInterval) && b.demand > 0 &&
		float64(b.offeredSince(false))*float64(quota.One)*1e9/float64(since) < 0.5*float64(b.demand):
		// Demand has fallen by half since the last report: say so now,
		// so that the coordinator can move the share where it is wanted
		// instead of waiting for the next renewal.
		return true
	}
	// Half a lease from the request that got the lease in use, not from
	// the last request: an answer that kept the lease (Kept) did not
	// move its end. Not sooner than HotInterval after the last request
	// (nor a quarter lease), should a renewal have been answered Kept.
	return now-b.leaseSent >= b.validFor/2+b.shiftOf() && since >= min(int64(l.cfg.HotInterval), b.validFor/4)
}

// shiftOf is how far Run moved the ordinary renewal of the lease in use
// from half the lease; 0 for a lease Run did not install. Called under
// mu.
func (b *bucket) shiftOf() int64 {
	if b.shiftFor != b.held {
		return 0
	}
	return b.shift
}

// nextLook is when Run should next ask Due about b, Due having said no at
// now: the earliest instant at which the passing of time alone can make
// it due, by the rules of Due (keep the two together). What else makes a
// tenant due — a refusal that makes it hot, a nudge, an answer — puts it
// up for Run's attention at once.
func (l *Limiter) nextLook(now int64, b *bucket) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seq == b.seq0 {
		return now
	}
	if b.answered < b.seq && b.lost != b.seq {
		return b.lastSend + int64(float64(l.retryAfterFailures(b.failures))*(1+b.jitter))
	}
	hot := int64(l.cfg.HotInterval)
	s := b.cur.Load()
	if !s.valid(now) {
		return b.lastSend + int64(l.cfg.Retry)
	}
	if b.nudged {
		return now
	}
	// The ordinary renewal; or the lease's end, past which the rule for
	// no lease holds.
	next := min(s.until, max(b.leaseSent+b.validFor/2+b.shiftOf(), b.lastSend+min(hot, b.validFor/4)))
	if b.hot.Load() {
		// Refusing: it may become due once HotInterval has passed since
		// the last request, and then whenever its demand grows: looked at
		// every HotInterval while it refuses.
		at := b.lastSend + hot
		if at <= now {
			at = now + hot
		}
		next = min(next, at)
	}
	if b.demand > 0 {
		// A fall of demand shows from 4 HotIntervals after the request,
		// and ever more surely as the interval grows: looked at 4, 8, 16
		// HotIntervals after it, until the renewal.
		after := 4 * hot
		for b.lastSend+after <= now {
			after *= 2
		}
		next = min(next, b.lastSend+after)
	}
	return next
}

// spreadLease moves the ordinary renewal of tenant's lease id, if it is
// the lease in use, by a draw of up to half of Config.Spread of the lease
// either way (Run, once it installed the lease).
func (l *Limiter) spreadLease(tenant string, id uint64) {
	if l.cfg.Spread <= 0 {
		return
	}
	b := l.bucket(tenant)
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held != id {
		return
	}
	// A draw apart from the retry jitter's, which draws on request
	// numbers: this one on lease IDs, with the top bit set.
	u := l.draw(tenant, id|1<<63)
	b.shift, b.shiftFor = int64((u-0.5)*l.cfg.Spread*float64(b.validFor)), id
}

// lose records that request seq of tenant's went in a call that failed as
// a whole (Run): nothing answered it, nothing will.
func (l *Limiter) lose(tenant string, seq uint64) {
	b := l.bucket(tenant)
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.seq == seq && b.answered < seq {
		b.lost = seq
	}
	b.mu.Unlock()
}

func (l *Limiter) retryAfterFailures(n int) time.Duration {
	d := l.cfg.Retry
	for range min(n, 30) {
		if d *= 2; d >= l.cfg.MaxRetry {
			return l.cfg.MaxRetry
		}
	}
	return d
}

// Return gives the tenant's lease back, as when the region shuts down: the
// bucket is invalidated first, then the returned message carries its
// balance. False if there was no valid lease.
func (l *Limiter) Return(now int64, tenant string) (quota.Return, bool) {
	b := l.bucket(tenant)
	if b == nil {
		return quota.Return{}, false
	}
	return l.giveBack(now, tenant, b)
}

// giveBack invalidates b's lease and says what to give back.
func (l *Limiter) giveBack(now int64, tenant string, b *bucket) (quota.Return, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.cur.Load()
	if !s.valid(now) {
		return quota.Return{}, false
	}
	tat, held := s.seal()
	var bal quota.Micro
	if tat != sealed {
		bal = s.balanceAt(tat, now) + quota.Micro(held)*quota.One
	}
	b.offered.Add(s.takeOffered())
	b.cur.Store(&state{lease: quota.Lease{}, mode: s.mode})
	if b.using.ID == s.lease.ID {
		b.using = quota.Lease{} // said by the return
	}
	return quota.Return{Tenant: tenant, Region: l.cfg.Region, LeaseID: s.lease.ID, Epoch: b.epoch, Balance: bal}, true
}
