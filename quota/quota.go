package quota

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// Micro is an amount of quota in millionths of a token: rates are Micro
// per second and bursts and balances are Micro. Integers keep the
// conservation sums exact — a float sum of three shares can exceed R by a
// rounding error, and the checker would rightly call that an overshoot.
type Micro int64

// One is a whole token.
const One Micro = 1_000_000

// Tokens converts a number of tokens to Micro, rounding down so that a
// share never grows in the conversion.
func Tokens(x float64) Micro { return Micro(math.Floor(x * float64(One))) }

// Float is the amount in tokens.
func (m Micro) Float() float64 { return float64(m) / float64(One) }

// String writes the amount in tokens with all six decimals that matter.
func (m Micro) String() string { return strconv.FormatFloat(m.Float(), 'f', -1, 64) }

// Mode is what a tenant's regions do when they cannot renew a lease.
type Mode int

const (
	// Hard is an abuse-prevention ceiling: a region admits only while its
	// lease is valid; at expiry its bucket is invalidated and its balance
	// dropped. Admissions in any window of length Δ stay within R·Δ + B;
	// the price of a partition or a coordinator outage is under-use.
	Hard Mode = iota
	// BestEffort is a commercial target: each region also keeps an
	// emergency allowance E, spent only while it holds no valid lease and
	// refilled only from its own leased refill when its bucket is full.
	// Admissions stay within R·Δ + B + regions·E.
	BestEffort
)

func (m Mode) String() string {
	switch m {
	case Hard:
		return "hard"
	case BestEffort:
		return "best-effort"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// ParseMode reads "hard" or "best-effort".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "hard":
		return Hard, nil
	case "best-effort":
		return BestEffort, nil
	}
	return 0, fmt.Errorf("%w: mode %q: want hard or best-effort", ErrConfig, s)
}

// Tenant is what a tenant bought and how its quota is run. The zero value
// of each optional field takes the default given with it.
type Tenant struct {
	Name  string
	Rate  Micro // R: the global refill rate, per second
	Burst Micro // B: the global burst
	// Regions are where its traffic enters; each keeps a floor share.
	// Required: the config file's tenants[].regions defaults to every
	// region the file names, but a Tenant alone knows no regions to
	// default to — a program names them (config.Config.QuotaTenants
	// fills them in from a file).
	Regions []string
	Mode    Mode
	// Emergency is E, the allowance each region may spend beyond its
	// lease in BestEffort mode; 0 in Hard mode.
	Emergency Micro
	// LeaseDuration is how long a lease is valid; default 10 s. Shorter
	// leases follow demand and end partitions sooner but cost more
	// renewals: a region renews every half lease, and more often when
	// its demand outgrows its share.
	LeaseDuration time.Duration
	// SkewMargin is max_skew: a region treats a lease as expired this much
	// early and the coordinator as live this much late; default 500 ms
	// (when zero), NoSkewMargin for none. It must cover clock drift over a
	// lease and scheduling delays. Margin is the one in force.
	SkewMargin time.Duration
	// Floor is the share of R and B each region keeps whatever its
	// demand, so that traffic arriving in a quiet region is served at
	// once; default 0.01 (1 %) per region (when zero), NoFloor for none.
	// FloorShare is the one in force.
	Floor float64
	// Costs weighs requests by endpoint: a request to an endpoint listed
	// here costs that many tokens, any other costs Cost(""), default 1.
	Costs map[string]int64
}

// Defaults for the optional fields of Tenant.
const (
	DefaultLeaseDuration = 10 * time.Second
	DefaultSkewMargin    = 500 * time.Millisecond
	DefaultFloor         = 0.01
)

// NoSkewMargin and NoFloor set a Tenant's SkewMargin and Floor to zero.
// Those fields' zero value means their default, as a zero struct field
// must; zero itself, which is in range, needs a value of its own, as
// net.Dialer's negative KeepAlive turns keep-alives off. WithDefaults
// keeps them, so that it may be applied any number of times; Margin and
// FloorShare read them as zero.
const (
	NoSkewMargin time.Duration = -1
	NoFloor      float64       = -1
)

// Margin is the skew margin in force: SkewMargin, its default when zero,
// and zero for NoSkewMargin.
func (t Tenant) Margin() time.Duration {
	switch t.SkewMargin {
	case 0:
		return DefaultSkewMargin
	case NoSkewMargin:
		return 0
	}
	return t.SkewMargin
}

// FloorShare is the floor in force: Floor, its default when zero, and
// zero for NoFloor.
func (t Tenant) FloorShare() float64 {
	switch t.Floor {
	case 0:
		return DefaultFloor
	case NoFloor:
		return 0
	}
	return t.Floor
}

// WithDefaults returns the tenant with its zero optional fields set
// (NoSkewMargin and NoFloor stay as they are: see Margin and FloorShare).
func (t Tenant) WithDefaults() Tenant {
	if t.LeaseDuration == 0 {
		t.LeaseDuration = DefaultLeaseDuration
	}
	if t.SkewMargin == 0 {
		t.SkewMargin = DefaultSkewMargin
	}
	if t.Floor == 0 {
		t.Floor = DefaultFloor
	}
	return t
}

// MinRate is the least rate a tenant may have: a thousandth of a token a
// second, one token in 16 minutes 40 seconds. Less is taken for a rate
// written in tokens where millionths are meant (Rate: 100 for
// quota.Tokens(100)), as is a burst of more than 0 and less than one
// token, under which no request is ever admitted.
const MinRate Micro = One / 1000

// Validate reports the first field out of range, naming it and the range.
func (t Tenant) Validate() error {
	t = t.WithDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: tenant %q: "+format, append([]any{ErrConfig, t.Name}, args...)...)
	}
	switch {
	case t.Name == "" || len(t.Name) > 128:
		return fmt.Errorf("%w: tenant name %q: want 1 to 128 bytes", ErrConfig, t.Name)
	case t.Rate < MinRate || t.Rate > 1e9*One:
		return bad("rate %v tokens a second: want %v to 1e9 (Rate is in millionths of a token: quota.Tokens(100) is 100 a second)", t.Rate, MinRate)
	case t.Burst < 0 || t.Burst > 1e12*One || t.Burst > 0 && t.Burst < One:
		return bad("burst %v tokens: want 0, or 1 to 1e12 (Burst is in millionths of a token: quota.Tokens(200) is 200)", t.Burst)
	case len(t.Regions) == 0 || len(t.Regions) > 64:
		return bad("%d regions: want 1 to 64 (a Tenant has no default; the config file's is every region it names)", len(t.Regions))
	case t.Mode != Hard && t.Mode != BestEffort:
		return bad("mode %d: want hard or best-effort", t.Mode)
	case t.Mode == Hard && t.Emergency != 0:
		return bad("emergency allowance %v in hard mode: want 0 (hard mode has none)", t.Emergency)
	case t.Emergency < 0 || t.Emergency > t.Burst:
		return bad("emergency allowance %v: want 0 to the burst (%v)", t.Emergency, t.Burst)
	case t.LeaseDuration < 100*time.Millisecond || t.LeaseDuration > time.Hour:
		return bad("lease duration %v: want 100ms to 1h", t.LeaseDuration)
	case t.SkewMargin < 0 && t.SkewMargin != NoSkewMargin || 2*t.Margin() >= t.LeaseDuration:
		return bad("skew margin %v: want 0 (NoSkewMargin) to less than half the lease duration (%v)", t.SkewMargin, t.LeaseDuration)
	case !(t.Floor >= 0) && t.Floor != NoFloor || t.FloorShare()*float64(len(t.Regions)) > 0.5:
		return bad("floor %v: want 0 (NoFloor) to 0.5/regions (%v)", t.Floor, 0.5/float64(len(t.Regions)))
	}
	seen := map[string]bool{}
	for i, r := range t.Regions {
		if r == "" || len(r) > 64 {
			return bad("regions[%d] %q: want 1 to 64 bytes", i, r)
		}
		if seen[r] {
			return bad("regions[%d] %q: listed twice", i, r)
		}
		seen[r] = true
	}
	for ep, c := range t.Costs {
		if c < 1 || c > 1_000_000 {
			return bad("cost of %q %d: want 1 to 1000000", ep, c)
		}
	}
	return nil
}

// Cost is what a request to an endpoint costs.
func (t Tenant) Cost(endpoint string) int64 {
	if c, ok := t.Costs[endpoint]; ok {
		return c
	}
	if c, ok := t.Costs[""]; ok {
		return c
	}
	return 1
}

// HasRegion says whether the tenant's traffic enters in region r.
func (t Tenant) HasRegion(r string) bool { return slices.Contains(t.Regions, r) }

// Lease is a share of a tenant's rate and burst, granted to one region by
// one coordinator epoch. Activates and Expires are on the coordinator's
// clock (nanoseconds of its monotonic time) and say when the coordinator
// counts the lease against the tenant's limits: Expires is already
// SkewMargin late. Leases travel to regions as a Grant, in durations.
type Lease struct {
	ID        uint64        `json:"id"`
	Tenant    string        `json:"tenant"`
	Region    string        `json:"region"`
	Epoch     uint64        `json:"epoch"`
	Rate      Micro         `json:"rate"`
	Burst     Micro         `json:"burst"`
	Activates time.Duration `json:"activates_ns"`
	Expires   time.Duration `json:"expires_ns"`
	// Transfer is balance the lease starts with: tokens a region returned,
	// confirmed, and the coordinator moved here. Never more than Burst.
	Transfer Micro `json:"transfer"`
}
