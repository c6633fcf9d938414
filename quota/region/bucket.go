package region

import (
	"math"
	"math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"

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
// Two cores admitting from one word move its cache line between them on
// every request, which costs more than the rest of Allow together on some
// machines (docs/benchmarks.md#global-quota). So a lease large enough has
// caches as well: several (four per P by default), each holding up to chunk whole tokens taken
// from the word chunk at a time, spent with a compare-and-swap on a line
// no other core writes. The word's capacity tau is the burst less what
// the caches may hold (len(caches)·chunk tokens), so the tokens the
// region holds — in the word and in the caches — never exceed the burst,
// and they enter only by the word's refill: the bound holds whichever
// cache serves a request. The price is under-use, never overshoot: after
// an idle spell the caches may be empty while the word is full, up to
// len(caches)·chunk tokens (a 64th of the burst at most) short.
//
// A lease with no refill (rate 0) keeps its balance in micro-tokens in the
// word instead (perToken == 0), and has no caches.
type state struct {
	tat atomic.Int64 // local ns; or the balance in Micro when perToken == 0; sealed when replaced
	// offered counts the tokens asked of this lease without a cache, for
	// the demand the region reports. It sits beside tat so that a request
	// under contention moves one cache line between cores, not two.
	offered atomic.Int64

	lease    quota.Lease
	perToken float64 // local ns per token, derated for clock drift; 0 for no refill
	cost1    int64   // cost(1), precomputed: ⌈perToken⌉
	tau      int64   // the word's capacity, in local ns of refill: the burst less the caches'
	from     int64   // local ns: valid from
	until    int64   // local ns: valid until (exclusive)
	mode     quota.Mode
	caches   []cache // picked by the goroutine's stack address; nil for none
	chunk    int64   // the most tokens a cache holds, and takes at a time
}

// cache is a share of a state's tokens. An admission from it writes held
// alone: the tokens it admitted are counted as what went in less what is
// held and what was taken out for other requests, so that the demand
// count costs the fast path nothing. Padded to 128 bytes, a line of its
// own even where the CPU fetches lines in pairs.
type cache struct {
	held    atomic.Int64 // whole tokens, 0 to chunk; cacheSealed once the state is replaced
	in      atomic.Int64 // tokens put in (less those left when it was sealed)
	out     atomic.Int64 // tokens taken out to serve a request of the slow path
	offered atomic.Int64 // tokens asked through the slow path, admitted or not
	base    int64        // the fast path's count at the last report (under the bucket's mu)
	_       [88]byte
}

// fast is the tokens admitted by the cache's fast path so far. Its parts
// are read one by one, so a read racing a deposit may be off by the
// deposit; the next read is right again, and reports take differences,
// so nothing is lost or counted twice over time.
func (c *cache) fast() int64 {
	return c.in.Load() - c.out.Load() - max(c.held.Load(), 0)
}

// cacheSealed marks a sealed cache: a take that reads it reloads the
// bucket's current state.
const cacheSealed = math.MinInt64

// defaultCaches is how many token caches a lease gets by default: four per
// P, so that goroutines running at once rarely pick the same one, and at
// most 64, since every cache may hold tokens an idle spell leaves unused.
func defaultCaches() int { return min(4*runtime.GOMAXPROCS(0), 64) }

// stackShift drops the bits of a stack address that differ between one
// goroutine's frames: goroutine stacks start at 2 KiB. The rest is mixed
// (Fibonacci hashing), since stacks grow to 8, 32 KiB and more, and their
// addresses then share their low bits.
//
// The pick reads that address through package unsafe, for what it buys:
// a sync.Pool that keeps a number per P picks as well without unsafe, but
// its Get and Put cost the fast path more than the clock reading does, and
// Allow then fell short of twice x/time/rate's speed on one goroutine
// (docs/benchmarks.md, "region.Limiter.Allow", has both, same runs). The
// address is only hashed, never dereferenced or kept.
const stackShift = 11

// roundCaches rounds a number of caches up to a power of two, so that a
// mask picks one.
func roundCaches(k int) int {
	if k <= 1 {
		return k
	}
	return 1 << bits.Len(uint(k-1))
}

// maxCacheChunk bounds a cache's tokens; a lease gets caches only when
// its burst covers 64 full caches each, so that they hold at most a 64th
// of it.
const maxCacheChunk = 32

// withCaches gives the state k caches, if its burst is large enough, and
// takes what they may hold off the word's capacity (unless overBurst, a
// deliberate fault for the chaos harness's mutation checks). Called once,
// before the state is published. k is rounded up to a power of two.
func (s *state) withCaches(k int, overBurst bool) {
	if k < 1 || s.perToken == 0 {
		return
	}
	k = roundCaches(k)
	chunk := min(maxCacheChunk, int64(s.lease.Burst/quota.One)/(64*int64(k)))
	if chunk < 1 {
		return
	}
	s.caches = make([]cache, k)
	s.chunk = chunk
	if !overBurst {
		s.tau -= int64(k) * chunk * s.cost1
	}
}

// valid says whether the state may admit at now.
func (s *state) valid(now int64) bool { return s.lease.ID != 0 && now >= s.from && now < s.until }

// at is the instant a reading of the clock stands for on s: now, or s's
// start if s was installed after now was read. A reader reads the clock,
// then the lease in use; a renewal installed between the two starts its
// lease at its own, later reading, and the reader's instant is only
// stale — the lease in use was valid when it was read. Read at the stale
// instant, the new lease was not valid yet and the old one was gone: a
// decision refused "no lease" and a readiness scan of 20,000 tenants,
// which takes milliseconds while renewals install thousands a second,
// named a few tenants as waiting at nearly every look.
func (s *state) at(now int64) int64 { return max(now, s.from) }

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

// tatFor is the tat that gives the word balance b at now.
func (s *state) tatFor(b quota.Micro, now int64) int64 {
	if s.perToken == 0 {
		return int64(b)
	}
	return now + s.tau - int64(math.Floor(float64(b)/float64(quota.One)*s.perToken))
}

// fill sets the state's balance to b at now, before it is published: the
// word first, up to its capacity, then the caches in order, whole tokens
// (a fraction that fits nowhere is dropped: under-use, not overshoot).
func (s *state) fill(b quota.Micro, now int64) {
	if s.caches != nil {
		word := min(b, s.balanceAt(now, now)) // the word's capacity
		rest := int64((b - word) / quota.One)
		for i := range s.caches {
			h := min(rest, s.chunk)
			s.caches[i].held.Store(h)
			s.caches[i].in.Store(h)
			rest -= h
		}
		b = word
	}
	s.tat.Store(s.tatFor(b, now))
}

// take tries to take n tokens at now: admitted, or refused (or sealed:
// reload and retry), and counts them as offered either way (not on
// retry). idle is, for an admission into a full bucket, how long (in ns
// of refill) the bucket had been dropping tokens since it filled — what a
// best-effort region's emergency allowance may refill from (see
// overflow). It stays in ns so that hard mode, which has no use for it,
// pays no division.
func (s *state) take(now, n int64) (admitted, retry bool, idle int64) {
	if s.caches == nil {
		admitted, retry, idle = s.takeWord(now, n)
		if !retry {
			s.offered.Add(n)
		}
		return admitted, retry, idle
	}
	// Which cache: one chosen by the address of this goroutine's stack,
	// so that a goroutine keeps to one cache (and its line stays in the
	// core that runs it) while goroutines running at once mostly keep to
	// different ones. No state is shared to choose, and no runtime
	// internal is needed (the P a goroutine runs on would serve better,
	// but only the runtime's procPin knows it, and a library does not
	// link to it). A stack that moves as it grows moves to another cache:
	// a hint, not a rule; correctness never depends on the choice.
	var here byte
	p := int((uint64(uintptr(unsafe.Pointer(&here)))>>stackShift)*0x9E3779B97F4A7C15>>32) & (len(s.caches) - 1)
	c := &s.caches[p]
	for {
		h := c.held.Load()
		if h == cacheSealed {
			return false, true, 0
		}
		if h < n {
			break
		}
		if c.held.CompareAndSwap(h, h-n) {
			return true, false, 0 // counted by c.fast
		}
	}
	admitted, retry, idle = s.takeSlow(c, now, n)
	if !retry {
		c.offered.Add(n)
	}
	return admitted, retry, idle
}

// takeSlow serves a request that its cache cannot: from the word,
// taking enough with it to fill the cache again; else from the word
// alone; else from the word and every cache together. In that last case,
// under contention, other requests may empty the caches between the count
// and the taking: the request is then refused and what it gathered goes
// back to the word. Run by one goroutine (the chaos harness), it refuses
// only when the word and the caches together hold fewer than n whole
// tokens.
func (s *state) takeSlow(c *cache, now, n int64) (admitted, retry bool, idle int64) {
	h := c.held.Load()
	if h == cacheSealed {
		return false, true, 0
	}
	if top := s.chunk - max(h, 0); top > 0 {
		admitted, retry, idle = s.takeWord(now, n+top)
		if retry {
			return false, true, 0
		}
		if admitted {
			s.giveBack(c.deposit(top, s.chunk))
			return true, false, idle
		}
	}
	admitted, retry, idle = s.takeWord(now, n)
	if admitted || retry {
		return admitted, retry, idle
	}
	// Gather: what the word holds, then the caches, own first.
	var held int64
	for i := range s.caches {
		if v := s.caches[i].held.Load(); v == cacheSealed {
			return false, true, 0
		} else {
			held += v
		}
	}
	tat := s.tat.Load()
	if tat == sealed {
		return false, true, 0
	}
	word := int64(s.balanceAt(tat, now) / quota.One)
	if word+held < n {
		return false, false, 0
	}
	need := n
	if a := min(word, need); a > 0 {
		ok, retry, in := s.takeWord(now, a)
		if retry {
			return false, true, 0
		}
		if ok {
			need -= a
			idle = in
		}
	}
	need = c.spend(need)
	for i := range s.caches {
		if need == 0 {
			break
		}
		need = s.caches[i].spend(need)
	}
	if need > 0 { // others took them first: refused, and what was gathered goes back
		s.giveBack(n - need)
		return false, false, idle
	}
	return true, false, idle
}

// giveBack returns k tokens taken from the word but not spent, rounded
// down to whole ns of refill so that it never returns more than was taken.
// It cannot overfill the word: a word whose tat falls below now is full,
// and what is returned past that is dropped. Returned to a sealed state,
// they are lost: under-use, not overshoot.
func (s *state) giveBack(k int64) {
	d := int64(float64(k) * s.perToken)
	for d > 0 {
		tat := s.tat.Load()
		if tat == sealed || s.tat.CompareAndSwap(tat, tat-d) {
			return
		}
	}
}

// spend takes up to need tokens from the cache and returns what is still
// needed.
func (c *cache) spend(need int64) int64 {
	for need > 0 {
		h := c.held.Load()
		if h <= 0 { // empty, or sealed
			return need
		}
		a := min(h, need)
		if c.held.CompareAndSwap(h, h-a) {
			c.out.Add(a)
			need -= a
		}
	}
	return need
}

// deposit puts up to n tokens into the cache without taking it past
// chunk, and returns what did not fit (another goroutine
// filled it first, or the state was sealed).
func (c *cache) deposit(n, chunk int64) (rest int64) {
	for {
		h := c.held.Load()
		if h == cacheSealed || h >= chunk {
			return n
		}
		if a := min(n, chunk-h); c.held.CompareAndSwap(h, h+a) {
			c.in.Add(a)
			return n - a
		}
	}
}

// takeWord is take on the word alone.
func (s *state) takeWord(now, n int64) (admitted, retry bool, idle int64) {
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

// seal replaces the state: it returns the word's final tat (sealed if
// another seal came first) and the tokens the caches held, and makes every
// later take fail with retry.
func (s *state) seal() (tat, held int64) {
	for {
		tat = s.tat.Load()
		if tat == sealed {
			break
		}
		if s.tat.CompareAndSwap(tat, sealed) {
			break
		}
	}
	for i := range s.caches {
		if h := s.caches[i].held.Swap(cacheSealed); h > 0 {
			s.caches[i].in.Add(-h) // never spent
			held += h
		}
	}
	if tat == sealed {
		held = 0 // counted by the seal that came first
	}
	return tat, held
}

// balance is the state's balance at now, in Micro: the word's and the
// caches'; 0 once sealed.
func (s *state) balance(now int64) quota.Micro {
	tat := s.tat.Load()
	if tat == sealed {
		return 0
	}
	bal := s.balanceAt(tat, now)
	for i := range s.caches {
		if h := s.caches[i].held.Load(); h > 0 {
			bal += quota.Micro(h) * quota.One
		}
	}
	return bal
}

// takeOffered reads and clears the tokens offered to this state. Called
// under the bucket's mu.
func (s *state) takeOffered() int64 {
	n := s.offered.Swap(0)
	for i := range s.caches {
		c := &s.caches[i]
		d := max(0, c.fast()-c.base) // a read behind a deposit catches up next time
		n += c.offered.Swap(0) + d
		c.base += d
	}
	return n
}

// peekOffered reads the tokens offered to this state. Called under the
// bucket's mu.
func (s *state) peekOffered() int64 {
	n := s.offered.Load()
	for i := range s.caches {
		c := &s.caches[i]
		n += c.offered.Load() + max(0, c.fast()-c.base)
	}
	return n
}

// waitFor is how long until n tokens fit, from now; false when they never
// will under this lease (n above the burst, no refill, or past its end).
// The caches' tokens count towards n.
func (s *state) waitFor(now, n int64) (int64, bool) {
	tat := s.tat.Load()
	if tat == sealed || s.perToken == 0 {
		return 0, false
	}
	if n > int64(s.lease.Burst/quota.One) {
		return 0, false
	}
	for i := range s.caches {
		if h := s.caches[i].held.Load(); h > 0 {
			n -= h
		}
	}
	if n <= 0 {
		return 0, true
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
