package region

import (
	"fmt"
	"time"

	"github.com/afloat/afloat/quota"
)

// Config configures a Limiter. The zero value of each optional field takes
// the default given with it.
type Config struct {
	// Region is where this limiter runs; required.
	Region string
	// Tenants are the tenants it serves at first; others are refused.
	// SetTenants changes the set while the limiter runs, so none is
	// allowed: a region that waits for the coordinator's list.
	Tenants []string
	// MaxDrift bounds how much faster than real time this machine's
	// monotonic clock may run (NTP slews by at most 500 ppm). Refill is
	// derated and lease validity shortened by it, so that a fast clock
	// cannot admit more than the lease allows; default 500e-6.
	MaxDrift float64
	// HotInterval is how soon a region whose demand outgrows its share
	// asks again; default 250 ms.
	HotInterval time.Duration
	// Retry is the first wait before re-sending an unanswered request; it
	// doubles up to MaxRetry while the coordinator stays unreachable.
	// Defaults 500 ms and 8 s.
	Retry, MaxRetry time.Duration
	// MaxRetryAfter caps the Retry-After the middleware promises; 30 s.
	MaxRetryAfter time.Duration
	// MaxPatience is the longest Run waits for a call's answer. Its
	// patience starts at Retry and doubles after each call that timed
	// out, up to MaxRetry; it goes past MaxRetry only when the
	// coordinator, refusing a call busy, says that a call now needs more
	// (quota.BusyError.Need: its writes queued ahead take that long), and
	// then no further than MaxPatience. 0 for the default: 10 s (a
	// lease's length: waiting longer would not keep a lease valid), or
	// MaxRetry if longer; at least MaxRetry, at most a minute.
	MaxPatience time.Duration
	// Jitter spreads re-sends: each wait before re-sending an unanswered
	// request is stretched by a random fraction up to Jitter, so that
	// regions (and tenants) cut off together do not come back in step.
	// 0 (the default) for none.
	Jitter float64
	// Seed seeds the jitter: each stretch is drawn from Seed, the region,
	// the tenant and the request's number (no global random source), so
	// that a limiter's waits follow from its config and the calls made to
	// it — a run replays exactly — and regions and tenants draw apart
	// even under one seed. Any value, 0 included, is a seed.
	Seed uint64
	// Caches is how many token caches each lease is spent from (see
	// state in bucket.go): 0 for the default, four per P (GOMAXPROCS at
	// New) and at most 64; −1 for none, so that every request takes from
	// the one shared word. The chaos harness uses 1, so that a run depends
	// on its seed alone and not on which cache served a call. A lease
	// installed while the limiter serves more than maxCachedTenants
	// tenants has none: 128 bytes per cache per tenant would add up, and
	// its requests spread over many buckets anyway.
	Caches int
	// BatchSize is the most requests (or returns) Run sends in one call
	// to the coordinator; default DefaultBatchSize, the most the network
	// API takes in one body (quota/remote's MaxBatch).
	BatchSize int
	// InFlight is the most calls Run has under way at once, renewals and
	// returns together — and one call of first leases more while the
	// others hold every place and the coordinator has kept up for
	// MaxPatience (Run); default DefaultInFlight. It paces a
	// region that starts with many tenants to the speed at which the
	// coordinator answers, and bounds what a slow coordinator has queued
	// for the region: at most (InFlight + 1) × BatchSize requests.
	InFlight int
	// Spread spreads Run's ordinary renewals over that fraction of a
	// lease around its half — each lease's instant drawn from Seed, the
	// region, the tenant and the lease — so that tenants granted together
	// do not renew together; default DefaultSpread, −1 for none (every
	// lease renewed at half, as a runner that calls Due itself does).
	Spread float64
	// SeqBase numbers requests from SeqBase+1. A region that restarts must
	// not reuse the numbers its previous run sent — the coordinator
	// answers a request it has seen with the grant it gave it, for
	// idempotent retries — so a process sets it from the wall clock
	// (quota/agent does); 0 for tests and simulations.
	SeqBase uint64
}

// Defaults of Run's batching (Config).
const (
	// DefaultBatchSize is the most requests Run sends in one call: the
	// network API's limit on a body (quota/remote's MaxBatch).
	DefaultBatchSize = 2048
	// DefaultInFlight is how many calls Run has under way at once: two,
	// so that one call's answer is being installed while the next is at
	// the coordinator, and a slow coordinator holds at most two batches
	// of a region.
	DefaultInFlight = 2
	// DefaultSpread spreads renewals over a fifth of a lease around its
	// half (4 to 6 s of a 10 s lease): as many renewals as at half on
	// average, a 50 ms tick carrying a fortieth of a cohort at most, and
	// at least 3.5 s of a 10 s lease left to retry in.
	DefaultSpread = 0.2
)

// defaultMaxPatience is Config.MaxPatience's default (with MaxRetry, if
// longer).
const defaultMaxPatience = 10 * time.Second

// DefaultConfig returns the defaults for a region.
func DefaultConfig(region string, tenants ...string) Config {
	return Config{
		Region: region, Tenants: tenants,
		MaxDrift: 500e-6, HotInterval: 250 * time.Millisecond,
		Retry: 500 * time.Millisecond, MaxRetry: 8 * time.Second,
		MaxRetryAfter: 30 * time.Second,
		BatchSize:     DefaultBatchSize, InFlight: DefaultInFlight, Spread: DefaultSpread,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig(c.Region, c.Tenants...)
	if c.MaxDrift == 0 {
		c.MaxDrift = d.MaxDrift
	}
	if c.HotInterval == 0 {
		c.HotInterval = d.HotInterval
	}
	if c.Retry == 0 {
		c.Retry = d.Retry
	}
	if c.MaxRetry == 0 {
		c.MaxRetry = d.MaxRetry
	}
	if c.MaxRetryAfter == 0 {
		c.MaxRetryAfter = d.MaxRetryAfter
	}
	if c.MaxPatience == 0 {
		c.MaxPatience = max(defaultMaxPatience, c.MaxRetry)
	}
	if c.BatchSize == 0 {
		c.BatchSize = d.BatchSize
	}
	if c.InFlight == 0 {
		c.InFlight = d.InFlight
	}
	if c.Spread == 0 {
		c.Spread = d.Spread
	}
	return c
}

// Validate reports the first field out of range.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Region == "" || len(c.Region) > 64:
		return fmt.Errorf("%w: region %q: want 1 to 64 bytes", quota.ErrConfig, c.Region)
	case len(c.Tenants) > MaxTenants:
		return fmt.Errorf("%w: %d tenants: want 0 to %d", quota.ErrConfig, len(c.Tenants), MaxTenants)
	case !(c.MaxDrift >= 0 && c.MaxDrift <= 0.01):
		return fmt.Errorf("%w: max drift %v: want 0 to 0.01", quota.ErrConfig, c.MaxDrift)
	case c.HotInterval < time.Millisecond || c.HotInterval > time.Minute:
		return fmt.Errorf("%w: hot interval %v: want 1ms to 1m", quota.ErrConfig, c.HotInterval)
	case c.Retry < time.Millisecond || c.MaxRetry < c.Retry || c.MaxRetry > time.Hour:
		return fmt.Errorf("%w: retry %v up to %v: want 1ms ≤ retry ≤ max retry ≤ 1h", quota.ErrConfig, c.Retry, c.MaxRetry)
	case c.MaxPatience < c.MaxRetry || c.MaxPatience > time.Minute:
		return fmt.Errorf("%w: max patience %v: want max retry (%v) to 1m", quota.ErrConfig, c.MaxPatience, c.MaxRetry)
	case c.MaxRetryAfter < time.Second || c.MaxRetryAfter > time.Hour:
		return fmt.Errorf("%w: max Retry-After %v: want 1s to 1h", quota.ErrConfig, c.MaxRetryAfter)
	case !(c.Jitter >= 0 && c.Jitter <= 1):
		return fmt.Errorf("%w: jitter %v: want 0 to 1", quota.ErrConfig, c.Jitter)
	case c.BatchSize < 1 || c.BatchSize > 1<<16:
		return fmt.Errorf("%w: batch size %d: want 1 to 65536 (0: %d)", quota.ErrConfig, c.BatchSize, DefaultBatchSize)
	case c.InFlight < 1 || c.InFlight > 64:
		return fmt.Errorf("%w: in flight %d: want 1 to 64 (0: %d)", quota.ErrConfig, c.InFlight, DefaultInFlight)
	case !(c.Spread == -1 || c.Spread > 0 && c.Spread <= 0.4):
		// At most 0.4: a renewal no sooner than 0.3 of a lease, past the
		// quarter within which the coordinator answers "unchanged".
		return fmt.Errorf("%w: spread %v: want -1 (none), 0 (the default: %v) or above 0 up to 0.4", quota.ErrConfig, c.Spread, DefaultSpread)
	case c.Caches < -1 || c.Caches > 1024:
		return fmt.Errorf("%w: caches %d: want -1 (none), 0 (the default: 4 per P, at most 64) or 1 to 1024", quota.ErrConfig, c.Caches)
	}
	for i, t := range c.Tenants {
		if t == "" || len(t) > 128 {
			return fmt.Errorf("%w: tenants[%d] %q: want 1 to 128 bytes", quota.ErrConfig, i, t)
		}
	}
	return nil
}
