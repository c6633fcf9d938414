package region

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/afloat/afloat/quota"
)

// Limiter is a region's side of the global quota: one leased token bucket
// per tenant. DecideAt and AllowAt are lock-free and make no network
// call; the renewal side (Request, Install, Nudge, Due) steps on explicit
// time and is what a runner — Run, or the chaos harness — drives. All
// methods are safe for concurrent use.
//
// Times are the region's own monotonic clock in nanoseconds (Now reads
// it); the lease's end is measured from when the region sent the request
// the lease answers, so the region always stops before the coordinator
// stops counting the lease.
type Limiter struct {
	cfg Config
	// idx is the tenants served and their buckets: an immutable index,
	// replaced whole by SetTenants (copy on write), so that Allow reads it
	// with one atomic load and no lock.
	idx    atomic.Pointer[index]
	start  time.Time     // the monotonic clock's reading at New
	caches int           // token caches per lease
	broken faults        // none but in a build with the tag mutation (faults.go)
	wake   chan struct{} // tells Run that a tenant wants renewing
	// up holds the tenants put up for Run's attention by paths that must
	// not lock or wait (schedule.go).
	up       attention
	running  atomic.Bool // Run is running
	counters runCounters
	unknown  atomic.Int64 // requests refused for a tenant not served here (Counts)

	// seqHigh and epochHigh are the highest request number sent and the
	// highest epoch seen, over every tenant: a tenant added later (or
	// again) numbers its requests after them, so that the coordinator
	// never takes a new request for a retry of an old one, and it starts
	// at the newest epoch known.
	seqHigh, epochHigh atomic.Uint64

	setMu   sync.Mutex     // serializes SetTenants
	leaving []quota.Return // leases of removed tenants, for Run to give back (under setMu)
	lapsed  []lapse        // leases of removed tenants that had run out unsaid, for Run to say (under setMu)
}

// index is a set of tenants and their buckets. It never changes once
// published.
type index struct {
	buckets map[string]*bucket
	// list holds the buckets again, in the order they were added. When
	// there are at most fewTenants (few), bucket scans it instead of the
	// map: comparing a handful of strings is cheaper than hashing one
	// (BenchmarkAllowAt).
	list []named
	few  bool
}

// bucket is one tenant's: the current lease's state, the demand counters
// Allow bumps, and the renewal bookkeeping (under mu).
type bucket struct {
	cur atomic.Pointer[state]
	// ceil is 1 + the most whole tokens a request may cost and ever be
	// admitted (the grants' Ceiling, or E if larger); 0 while unknown.
	// Beside cur, as Allow reads both and Install alone writes it (and
	// only when it changes).
	ceil atomic.Int64
	// ask is the renewal bookkeeping a refusal's Retry-After needs, in
	// one word that Install and Request update under mu (noteAsk), so
	// that a decision reads it without mu.
	ask     atomic.Int64
	offered atomic.Int64 // tokens offered since the last request, without a valid lease (and carried over from replaced ones)
	// The refusals and the allowance's admissions since New, in tokens
	// (Counts): one add on paths that already wrote a counter, none on
	// the admitting path, whose count Counts derives from offered.
	refusedEmpty   atomic.Int64 // a valid lease without the tokens
	refusedNoLease atomic.Int64 // no valid lease (hard mode)
	refusedSpent   atomic.Int64 // no valid lease, the emergency allowance spent (best effort)
	emergency      atomic.Int64 // admitted from the emergency allowance
	refusedLarge   atomic.Int64 // costing more than the tenant's quota can ever hold here
	hot            atomic.Bool  // refused something since the last request
	reserve        atomic.Int64 // Micro: the emergency allowance left (best effort)
	// reserveCap is the allowance's size, E, from the grants.
	reserveCap atomic.Int64

	// name is the tenant's, and att the limiter's attention list, which
	// a refusal that makes the tenant hot puts it on (schedule.go).
	name   string
	att    *attention
	queued atomic.Bool // on att
	upNext *bucket     // the next bucket on att (see attention)
	run    runState    // Run's schedule (Run's goroutine alone)

	mu         sync.Mutex
	offeredAcc int64 // tokens offered up to the last request (Counts)
	seq        uint64
	seq0       uint64      // seq when the bucket was made: nothing asked yet while seq is seq0
	sent       [32]sentReq // ring of recent requests, by seq
	lastSend   int64
	answered   uint64 // highest seq answered
	lastReport int64
	epoch      uint64 // highest coordinator epoch seen
	nudged     bool
	failures   int // consecutive unanswered requests
	validFor   int64
	mode       quota.Mode
	held       uint64 // highest lease ID installed
	// resumed is the lease handed over by the region's previous agent
	// (Resume), named by the next request while nothing is installed,
	// and resumedUntil its end as handed over, on this clock (0: not
	// known): Run renews it among the renewals, by that end.
	resumed      uint64
	resumedUntil int64
	// using is the lease the region spends under as its journal knows
	// it — installed, and its end not yet said (Expired, Installed) —
	// and usingUntil that lease's end on this clock.
	using      quota.Lease
	usingUntil int64
	leaseSent  int64 // when the request that got the lease in use was sent: the ordinary renewal is half a lease later
	short      bool  // the newest answer said the lease falls short of the target share (quota.Grant.Short)
	reported   bool
	demand     quota.Micro // the demand last reported
	jitter     float64     // this request's stretch of the retry interval
	// lost is the number of the last request whose call failed as a
	// whole (Run): not waiting for an answer, it is due again by the
	// ordinary rules, and Run's region-wide backoff says when to send.
	lost uint64
	// shift moves the ordinary renewal of lease shiftFor from half the
	// lease (Config.Spread; set by Run, so that a runner that installs
	// grants itself renews at half).
	shift    int64
	shiftFor uint64
}

// maxCachedTenants is the most tenants a limiter keeps token caches for.
const maxCachedTenants = 1024

// fewTenants is how many tenants a linear scan serves faster than the map.
const fewTenants = 8

type named struct {
	tenant string
	b      *bucket
}

// bucket finds tenant's bucket: nil for a tenant the limiter does not serve.
func (l *Limiter) bucket(tenant string) *bucket {
	ix := l.idx.Load()
	if ix.few {
		for i := range ix.list {
			if ix.list[i].tenant == tenant {
				return ix.list[i].b
			}
		}
		return nil
	}
	return ix.buckets[tenant]
}

// lapse is a lease that ran out at at, for a journal to record.
type lapse struct {
	lease quota.Lease
	at    int64
}

type sentReq struct {
	seq uint64
	at  int64
}

// New returns a limiter with no lease: it refuses everything until the
// first grant is installed.
func New(cfg Config) (*Limiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	l := &Limiter{cfg: cfg, wake: make(chan struct{}, 1), start: time.Now()}
	switch l.caches = cfg.Caches; {
	case l.caches == -1:
		l.caches = 0
	case l.caches == 0:
		l.caches = defaultCaches()
	}
	l.seqHigh.Store(cfg.SeqBase)
	ix := &index{buckets: make(map[string]*bucket, len(cfg.Tenants))}
	for _, t := range cfg.Tenants {
		if _, dup := ix.buckets[t]; dup {
			return nil, fmt.Errorf("%w: tenant %q listed twice", quota.ErrConfig, t)
		}
		ix.add(t, l.newBucket(t))
	}
	ix.few = len(ix.list) <= fewTenants
	l.idx.Store(ix)
	return l, nil
}

// newBucket is a new tenant's bucket, with no lease.
func (l *Limiter) newBucket(tenant string) *bucket {
	seq := l.seqHigh.Load()
	b := &bucket{seq: seq, seq0: seq, epoch: l.epochHigh.Load(), name: tenant, att: &l.up}
	b.cur.Store(&state{})
	return b
}

func (ix *index) add(tenant string, b *bucket) {
	ix.buckets[tenant] = b
	ix.list = append(ix.list, named{tenant, b})
}

// Region is the limiter's region.
func (l *Limiter) Region() string { return l.cfg.Region }

// Tenants lists the tenants it serves now (New's, as SetTenants changed
// them), in the order they were added.
func (l *Limiter) Tenants() []string {
	ix := l.idx.Load()
	out := make([]string, len(ix.list))
	for i, n := range ix.list {
		out[i] = n.tenant
	}
	return out
}

// Serves reports whether the limiter serves tenant now (New's tenants,
// as SetTenants changed them): a front that answers an unknown tenant
// otherwise than a refused one, as package regionhttp does with 403,
// asks it first. It takes no lock, as Allow does; safe for concurrent use.
func (l *Limiter) Serves(tenant string) bool { return l.bucket(tenant) != nil }

// Now reads the limiter's clock: monotonic nanoseconds since New. It is
// time.Since of a reading with a monotonic part, which reads the
// monotonic clock alone (no wall clock): the cheapest clock the standard
// library has. A runner that steps virtual time passes its own readings
// to the methods that take now (DecideAt, AllowAt, Request, Install, Due,
// Status) instead.
func (l *Limiter) Now() int64 { return int64(time.Since(l.start)) }

// Start is the wall-clock instant at which Now read 0: the origin that
// maps the limiter's clock to Unix time, Start().UnixNano() + Now(). A
// process that logs the limiter's instants maps them with it rather than
// with a time.Now of its own, read apart from this one: that would shift
// every instant by the gap between the two reads.
func (l *Limiter) Start() time.Time { return l.start }
