package region

import (
	"math"
	"sync/atomic"

	"github.com/afloat/afloat/quota"
)

// sealed marks a lease state that a newer one has replaced: an Allow that
// reads it reloads the bucket's current state. Sealing with a
// compare-and-swap makes the replacement read the last balance exactly:
// no admission can slip into the old state after its balance was taken.
const sealed = math.MaxInt64

// state is one lease as a region spends it: a token bucket in the GCRA
// form, one word (tat, the "theoretical arrival time") that every
// admission advances with a compare-and-swap. The bucket holds
// (tau − (tat − now)) / perToken tokens: full when tat ≤ now, and a
// request of n tokens fits when tat + n·perToken − now ≤ tau.
//
// A lease with no refill (rate 0) keeps its balance in micro-tokens in the
// same word instead (perToken == 0).
type state struct {
	tat atomic.Int64 // local ns; or the balance in Micro when perToken == 0; sealed when replaced
	// offered counts the tokens asked of this lease, for the demand the
	// region reports. It sits beside tat so that a request under contention
	// moves one cache line between cores, not two.
	offered atomic.Int64

	lease    quota.Lease
	perToken float64 // local ns per token, derated for clock drift; 0 for no refill
	cost1    int64   // cost(1), precomputed: ⌈perToken⌉
	tau      int64   // the burst, in local ns of refill
	from     int64   // local ns: valid from
	until    int64   // local ns: valid until (exclusive)
	mode     quota.Mode
}

// valid says whether the state may admit at now.
func (s *state) valid(now int64) bool { return s.lease.ID != 0 && now >= s.from && now < s.until }

// cost is what n tokens advance tat by: rounded up, so that rounding
// never admits more than the lease allows.
func (s *state) cost(n int64) int64 {
	if n == 1 {
		return s.cost1 // the common case, without the float
	}
	return int64(math.Ceil(float64(n) * s.perToken))
}

// balanceAt is the bucket's balance at now given tat, in Micro.
func (s *state) balanceAt(tat, now int64) quota.Micro {
	if s.perToken == 0 {
		return quota.Micro(tat)
	}
	debt := max(0, tat-now)
	return quota.Micro(math.Floor(float64(s.tau-debt) / s.perToken * float64(quota.One)))
}

// tatFor is the tat that gives balance b at now.
func (s *state) tatFor(b quota.Micro, now int64) int64 {
	if s.perToken == 0 {
		return int64(b)
	}
	return now + s.tau - int64(math.Floor(float64(b)/float64(quota.One)*s.perToken))
}

// take tries to take n tokens at now: admitted, or refused (or sealed:
// reload and retry). idle is, for an admission into a full bucket, how
// long (in ns of refill) the bucket had been dropping tokens since it
// filled — what a best-effort region's emergency allowance may refill
// from (see overflow). It stays in ns so that hard mode, which has no use
// for it, pays no division.
func (s *state) take(now, n int64) (admitted, retry bool, idle int64) {
	for {
		tat := s.tat.Load()
		if tat == sealed {
			return false, true, 0
		}
		if s.perToken == 0 {
			left := tat - n*int64(quota.One)
			if left < 0 {
				return false, false, 0
			}
			if s.tat.CompareAndSwap(tat, left) {
				return true, false, 0
			}
			continue
		}
		base := max(tat, now)
		next := base + s.cost(n)
		if next-now > s.tau {
			return false, false, 0
		}
		if s.tat.CompareAndSwap(tat, next) {
			return true, false, max(0, now-tat)
		}
	}
}

// overflow is the tokens a full bucket dropped in idle ns of refill.
func (s *state) overflow(idle int64) quota.Micro {
	return quota.Micro(float64(idle) / s.perToken * float64(quota.One))
}

// seal replaces the state: it returns the final tat (so the balance) and
// makes every later take fail with retry.
func (s *state) seal() int64 {
	for {
		tat := s.tat.Load()
		if tat == sealed {
			return sealed
		}
		if s.tat.CompareAndSwap(tat, sealed) {
			return tat
		}
	}
}

// waitFor is how long until n tokens fit, from now; false when they never
// will under this lease (n above the burst, no refill, or past its end).
func (s *state) waitFor(now, n int64) (int64, bool) {
	tat := s.tat.Load()
	if tat == sealed || s.perToken == 0 {
		return 0, false
	}
	c := s.cost(n)
	if c > s.tau {
		return 0, false
	}
	at := max(tat, now) + c - s.tau
	if at >= s.until {
		return 0, false
	}
	return max(0, at-now), true
}
