package assign

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/afloat/afloat/assign/internal/lua"
)

// model is the pool as Go maps: the reference the property test holds the
// Lua scripts to (etcd raft's quorum/quick_test.go does the same for its
// committed index). Its clock is now, in ms, which the test steps.
type model struct {
	counts   map[string]int64 // every member of the pool, active, cooling or removed
	removed  map[string]bool
	cooling  map[string]int64 // release time in ms
	weights  map[string]int   // absent: 1
	failures map[string]int64 // any name
	streaks  map[string]int64 // any name
	reqs     map[string]string
	sticky   map[string]string // sticky key → member
	limits   map[string]Limit
	tats     map[string]float64 // GCRA's theoretical arrival time, ms
	caps     map[string]int     // concurrency caps
	leases   map[string]Lease   // by id; open while its deadline is not past
	seq      int
	settings Settings
	now      int64
}

func newModel() *model {
	return &model{
		counts: map[string]int64{}, removed: map[string]bool{}, cooling: map[string]int64{},
		weights: map[string]int{}, failures: map[string]int64{}, streaks: map[string]int64{},
		reqs: map[string]string{}, sticky: map[string]string{}, now: 1_000_000,
		limits: map[string]Limit{}, tats: map[string]float64{},
		caps: map[string]int{}, leases: map[string]Lease{},
	}
}

// deadlines are n's open leases' deadlines, the first to end first: a
// lease is open until its deadline has passed.
func (m *model) deadlines(n string) []int64 {
	var out []int64
	for _, l := range m.leases {
		if d := l.Deadline.UnixMilli(); l.Member == n && d >= m.now {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// full: no room under its concurrency cap.
func (m *model) full(n string) bool {
	return m.caps[n] > 0 && len(m.deadlines(n)) >= m.caps[n]
}

// outUntil is when an active member is back: the end of its cooldown or,
// full, one ms after the deadline of the lease whose end brings it under
// its cap, whichever is later; 0 for a member that is not out.
func (m *model) outUntil(n string) int64 {
	t := m.cooling[n]
	if m.full(n) {
		ds := m.deadlines(n)
		t = max(t, ds[len(ds)-m.caps[n]]+1)
	}
	return t
}

func (m *model) weight(n string) int { return cmp.Or(m.weights[n], 1) }

// score is what the sorted set holds: count / weight, rounded once.
func (m *model) score(n string) float64 { return float64(m.counts[n]) / float64(m.weight(n)) }

func (m *model) exists() bool { return len(m.counts) > 0 }

// thaw: cooldowns whose release time has come are over.
func (m *model) thaw() {
	for n, t := range m.cooling {
		if t <= m.now {
			delete(m.cooling, n)
		}
	}
}

// eligible: in the pool and not removed (cooling or not).
func (m *model) eligible(n string) bool { _, in := m.counts[n]; return in && !m.removed[n] }

// ready: the active members not cooling, in pick order.
func (m *model) ready() []string {
	var out []string
	for n := range m.counts {
		if m.eligible(n) && m.outUntil(n) == 0 {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(m.score(a), m.score(b)), cmp.Compare(a, b)) })
	return out
}

// coolingOrder: the active members out (cooling or full), the first
// back first.
func (m *model) coolingOrder() []string {
	var out []string
	for n := range m.counts {
		if m.eligible(n) && m.outUntil(n) != 0 {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(m.outUntil(a), m.outUntil(b)), cmp.Compare(a, b)) })
	return out
}

func (m *model) lowest() (float64, bool) {
	r := m.ready()
	if len(r) == 0 {
		return 0, false
	}
	return m.score(r[0]), true
}

// pick: the lowest count / weight among members not cooling, ties to the
// lowest name in byte order; then the last resort.
func (m *model) pick(id string) (string, error) {
	if id != "" {
		if got, ok := m.reqs[id]; ok {
			return got, nil
		}
	}
	m.thaw()
	var best string
	if r := m.ready(); len(r) > 0 {
		best = r[0]
	} else if c := m.coolingOrder(); len(c) > 0 {
		if m.settings.LastResort != LastResortEarliest {
			return "", &CoolingError{Until: time.UnixMilli(m.outUntil(c[0]))}
		}
		best = c[0]
	} else if m.exists() {
		return "", ErrPoolEmpty
	} else {
		return "", ErrUnknownPool
	}
	if m.outUntil(best) != 0 {
		m.counts[best]++ // the last resort: over any limit, the limit untouched
	} else {
		m.bump(best)
	}
	if id != "" {
		m.reqs[id] = best
	}
	return best, nil
}

// bump counts a pick of a ready member and spends its rate limit (GCRA):
// left with no room, it cools until it has some.
func (m *model) bump(n string) {
	m.counts[n]++
	l, ok := m.limits[n]
	if !ok {
		return
	}
	t := float64(l.Per.Milliseconds()) / float64(l.Rate)
	now := float64(m.now)
	tat := now
	if v, ok := m.tats[n]; ok {
		tat = max(v, now)
	}
	m.tats[n] = tat + t
	if free := int64(math.Ceil(m.tats[n] - float64(l.Burst-1)*t)); free > m.now {
		m.cool(n, free)
	}
}

func (m *model) setLimit(l Limit, names []string) error {
	if !m.exists() {
		return ErrUnknownPool
	}
	m.thaw()
	for _, n := range names {
		if _, in := m.counts[n]; !in {
			return ErrUnknownMember
		}
	}
	for _, n := range names {
		if l.Rate == 0 {
			delete(m.limits, n)
			delete(m.tats, n)
			continue
		}
		m.limits[n] = l
		t := float64(l.Per.Milliseconds()) / float64(l.Rate)
		if tat, ok := m.tats[n]; ok && m.eligible(n) && m.outUntil(n) == 0 {
			if free := int64(math.Ceil(tat - float64(l.Burst-1)*t)); free > m.now {
				m.cool(n, free)
			}
		}
	}
	return nil
}

// pickSticky: the key's member while it is active and not cooling, else
// a pick that the key keeps. (The records outlive the test: their TTL is
// on Redis's own clock.)
func (m *model) pickSticky(key string) (string, error) {
	if s, ok := m.sticky[key]; ok {
		m.thaw()
		if m.eligible(s) && m.outUntil(s) == 0 {
			m.bump(s)
			return s, nil
		}
	}
	got, err := m.pick("")
	if err == nil {
		m.sticky[key] = got
	}
	return got, err
}

func (m *model) add(count int64, atMin bool, w int, names []string) AddResult {
	m.thaw()
	if lo, ok := m.lowest(); ok && atMin {
		count = int64(math.Ceil(lo * float64(w)))
	} else if atMin {
		count = 0
	}
	var r AddResult
	for _, n := range names {
		switch _, in := m.counts[n]; {
		case m.removed[n]:
			r.Removed++
		case in:
			r.Active++
		default:
			m.counts[n] = count
			if w != 1 {
				m.weights[n] = w
			}
			r.Added++
		}
	}
	return r
}

func (m *model) remove(names []string) error {
	if !m.exists() {
		return ErrUnknownPool
	}
	m.thaw()
	for _, n := range names {
		if !m.eligible(n) {
			return ErrUnknownMember
		}
	}
	for _, n := range names {
		m.removed[n] = true
		delete(m.cooling, n)
	}
	return nil
}

func (m *model) restore(p RestorePolicy, names []string) error {
	if !m.exists() {
		return ErrUnknownPool
	}
	m.thaw()
	for _, n := range names {
		if !m.removed[n] {
			return ErrUnknownMember
		}
	}
	lo, ok := m.lowest()
	for _, n := range names {
		switch {
		case p == RestoreZero:
			m.counts[n] = 0
		case p == RestoreCurrentMinimum && ok:
			m.counts[n] = int64(math.Ceil(lo * float64(m.weight(n))))
		}
		delete(m.removed, n)
	}
	return nil
}

// cool: the later of two cooldowns; returns when n is back.
func (m *model) cool(n string, release int64) int64 {
	m.cooling[n] = max(m.cooling[n], release)
	return m.outUntil(n)
}

// acquire: the least-used member with room, counted and leased; no last
// resort.
func (m *model) acquire(ttl int64) (Lease, error) {
	m.thaw()
	r := m.ready()
	if len(r) == 0 {
		if c := m.coolingOrder(); len(c) > 0 {
			return Lease{}, &CoolingError{Until: time.UnixMilli(m.outUntil(c[0]))}
		}
		if m.exists() {
			return Lease{}, ErrPoolEmpty
		}
		return Lease{}, ErrUnknownPool
	}
	m.bump(r[0])
	m.seq++
	l := Lease{Member: r[0], ID: strconv.Itoa(m.seq), Deadline: time.UnixMilli(m.now + ttl)}
	m.leases[l.ID] = l
	return l, nil
}

// release: true for a lease open; one past its deadline is settled.
func (m *model) release(l Lease) bool {
	had, ok := m.leases[l.ID]
	if !ok || had.Member != l.Member {
		return false
	}
	delete(m.leases, l.ID)
	return had.Deadline.UnixMilli() >= m.now
}

func (m *model) setConcurrency(n int, names []string) error {
	if !m.exists() {
		return ErrUnknownPool
	}
	m.thaw()
	for _, x := range names {
		if _, in := m.counts[x]; !in {
			return ErrUnknownMember
		}
	}
	for _, x := range names {
		if n == 0 {
			delete(m.caps, x)
		} else {
			m.caps[x] = n
		}
	}
	return nil
}

func (m *model) cooldownFor(d int64, names []string) ([]int64, error) {
	if !m.exists() {
		return nil, ErrUnknownPool
	}
	m.thaw()
	for _, n := range names {
		if !m.eligible(n) {
			return nil, ErrUnknownMember
		}
	}
	var out []int64
	for _, n := range names {
		out = append(out, m.cool(n, m.now+d))
	}
	return out, nil
}

func (m *model) failure(n string, after int64) FailureOutcome {
	m.failures[n]++
	m.thaw()
	if !m.eligible(n) {
		return FailureOutcome{}
	}
	m.streaks[n]++
	o := FailureOutcome{Member: true, Streak: m.streaks[n]}
	if e := m.settings.EvictAfter; e > 0 && m.streaks[n] >= int64(e) {
		m.removed[n] = true
		delete(m.cooling, n)
		delete(m.streaks, n)
		o.Evicted = true
	} else if after > 0 {
		o.CoolingUntil = time.UnixMilli(m.cool(n, m.now+after))
	}
	return o
}

func (m *model) setWeight(w int, names []string) error {
	if !m.exists() {
		return ErrUnknownPool
	}
	m.thaw()
	for _, n := range names {
		if _, in := m.counts[n]; !in {
			return ErrUnknownMember
		}
	}
	for _, n := range names {
		if w == 1 {
			delete(m.weights, n)
		} else {
			m.weights[n] = w
		}
	}
	return nil
}

func (m *model) list() []Member {
	m.thaw()
	mem := func(n string) Member {
		x := Member{Name: n, Count: m.counts[n], Active: !m.removed[n], Failures: m.failures[n], Streak: m.streaks[n], Weight: m.weight(n),
			Concurrency: m.caps[n], InFlight: int64(len(m.deadlines(n)))}
		if l, ok := m.limits[n]; ok {
			x.Limit = &l
		}
		return x
	}
	var out []Member
	for _, n := range m.ready() {
		out = append(out, mem(n))
	}
	for _, n := range m.coolingOrder() {
		x := mem(n)
		x.CoolingUntil = time.UnixMilli(m.outUntil(n))
		out = append(out, x)
	}
	var rem []string
	for n := range m.removed {
		rem = append(rem, n)
	}
	slices.Sort(rem)
	for _, n := range rem {
		out = append(out, mem(n))
	}
	return out
}

// sameErr: both nil, or both the same sentinel; a *CoolingError must carry
// the same time.
func sameErr(got, want error) bool {
	if want == nil || got == nil {
		return got == want
	}
	var gc, wc *CoolingError
	if errors.As(want, &wc) {
		return errors.As(got, &gc) && gc.Until.Equal(wc.Until)
	}
	return errors.Is(got, want)
}

// testClockPool opens a pool whose scripts read the time from the pool's
// key testclock (lua.TestClock), and sets that clock to ms.
//
// Why a clock of the tests' own rather than Redis's TIME with a
// tolerance: with TIME, a cooldown's end falls between two steps at a
// moment the test cannot see, and every comparison near it would need a
// margin that hides exactly the off-by-one errors (is a member back at
// its release time or one millisecond later?) the model is there to
// catch. The clock is chosen when the scripts are built (lua.Pool and
// lua.TestClock differ only in now_ms), so that no exported name, option
// or argument lets a program set the time of a pool.
func testClockPool(t testing.TB, c rueidis.Client, name string, ms int64) (*Pool, func(int64)) {
	t.Helper()
	p := newPool(t, c, name)
	p.s = lua.TestClock
	p.reclaim = 1 // an Acquire settles the member's own expired leases beyond these
	p.pick = &call{s: p.s.Pick, keys: p.keys}
	p.r.c.pin(p.pick)
	key := p.k.Active[:len(p.k.Active)-len("counts")] + "testclock"
	set := func(ms int64) {
		if err := c.Do(ctxFor(t), c.B().Set().Key(key).Value(strconv.FormatInt(ms, 10)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	set(ms)
	return p, set
}

// TestPickMatchesModel runs random sequences of add (weighted or not, at
// a count or at the minimum), remove, restore (every policy), pick,
// pick-with-id, batched picks (of one script and of several: sizes around
// pickChunk), cooldowns, failures (with and without retry-after),
// successes, weights, settings, sticky picks, leases (acquire and
// release) under concurrency caps and steps of the clock
// against Redis and the model, and compares every answer and the whole
// pool after each step: ten seeds of 200 steps in make test (-short),
// thirty in make test-long.
func TestPickMatchesModel(t *testing.T) {
	_, c := newClient(t)
	names := []string{"a", "b", "c", "d", "e", "ab", "B", "z9"} // "B" < "a" in byte order
	seeds := uint64(30)
	if testing.Short() {
		seeds = 10
	}
	for seed := range seeds {
		// A minute for each seed: under the race detector on a busy
		// machine thirty seeds took longer than one minute for all.
		ctx := ctxFor(t)
		rng := rand.New(rand.NewPCG(seed, 7))
		m := newModel()
		p, setClock := testClockPool(t, c, fmt.Sprintf("model-%d", seed), m.now)
		sub := func() []string {
			k := 1 + rng.IntN(3)
			out := slices.Clone(names)
			rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
			return out[:k]
		}
		weight := func() int { return []int{1, 1, 2, 3, 7}[rng.IntN(5)] }
		var held []Lease // leases acquired, some released since
		for step := range 200 {
			var what string
			fail := func(got, want any) {
				t.Helper()
				t.Fatalf("seed %d step %d: %s = %v, want %v", seed, step, what, got, want)
			}
			switch op := rng.IntN(24); {
			case op < 3:
				ns, count, atMin, w := sub(), rng.Int64N(5), rng.IntN(2) == 0, weight()
				what = fmt.Sprintf("add(%v, %d, atMin=%v, weight %d)", ns, count, atMin, w)
				var got AddResult
				var err error
				if atMin {
					got, err = p.AddWeighted(ctx, w, AtMinimum, ns...)
				} else {
					got, err = p.AddWeighted(ctx, w, count, ns...)
				}
				if want := m.add(count, atMin, w, ns); err != nil || got != want {
					fail(fmt.Sprint(got, err), want)
				}
			case op < 4:
				ns := sub()
				what = fmt.Sprintf("remove(%v)", ns)
				if err, want := p.Remove(ctx, ns...), m.remove(ns); !sameErr(err, want) {
					fail(err, want)
				}
			case op < 5:
				ns, pol := sub(), RestorePolicy(rng.IntN(3))
				what = fmt.Sprintf("restore(%v, %v)", ns, pol)
				if err, want := p.Restore(ctx, pol, ns...), m.restore(pol, ns); !sameErr(err, want) {
					fail(err, want)
				}
			case op < 6:
				n := []int{1, 2, 3, 7, pickChunk - 1, pickChunk, pickChunk + 1, 2*pickChunk + 5}[rng.IntN(8)]
				what = fmt.Sprintf("pickBatch(%d)", n)
				res, err := p.PickBatch(ctx, n)
				if err != nil || len(res) != n {
					fail(fmt.Sprint(len(res), err), n)
				}
				var stopped error // a pick that found none ends its script's picks
				for i, r := range res {
					if i%pickChunk == 0 {
						stopped = nil
					}
					want, werr := "", stopped
					if stopped == nil {
						want, werr = m.pick("")
						stopped = werr
					}
					if r.Member != want || !sameErr(r.Err, werr) {
						fail(fmt.Sprintf("pick %d: %q %v", i, r.Member, r.Err), fmt.Sprintf("%q %v", want, werr))
					}
				}
			case op < 8:
				ns, d := sub(), 1+rng.Int64N(3000)
				what = fmt.Sprintf("cooldownFor(%d ms, %v)", d, ns)
				got, err := p.CooldownFor(ctx, time.Duration(d)*time.Millisecond, ns...)
				want, werr := m.cooldownFor(d, ns)
				var gotMS []int64
				for _, g := range got {
					gotMS = append(gotMS, g.UnixMilli())
				}
				if !sameErr(err, werr) || !slices.Equal(gotMS, want) {
					fail(fmt.Sprint(gotMS, err), fmt.Sprint(want, werr))
				}
			case op < 10:
				n, after := names[rng.IntN(len(names))], []int64{0, 0, 500, 2000}[rng.IntN(4)]
				what = fmt.Sprintf("recordFailure(%q, retry after %d ms)", n, after)
				got, err := p.RecordFailure(ctx, n, time.Duration(after)*time.Millisecond)
				if want := m.failure(n, after); err != nil || got != want {
					fail(fmt.Sprintf("%+v %v", got, err), fmt.Sprintf("%+v", want))
				}
			case op < 11:
				n := names[rng.IntN(len(names))]
				what = fmt.Sprintf("recordSuccess(%q)", n)
				if err := p.RecordSuccess(ctx, n); err != nil {
					fail(err, nil)
				}
				delete(m.streaks, n)
			case op < 12:
				ns, w := sub(), weight()
				what = fmt.Sprintf("setWeight(%d, %v)", w, ns)
				if err, want := p.SetWeight(ctx, w, ns...), m.setWeight(w, ns); !sameErr(err, want) {
					fail(err, want)
				}
			case op < 13:
				s := Settings{EvictAfter: rng.IntN(4), LastResort: LastResort(rng.IntN(2))}
				what = fmt.Sprintf("setSettings(%+v)", s)
				if err := p.SetSettings(ctx, s); err != nil {
					fail(err, nil)
				}
				m.settings = s
			case op == 17:
				ns := sub()
				l := []Limit{{}, {Rate: 1, Per: time.Second, Burst: 1}, {Rate: 3, Per: time.Second, Burst: 2}, {Rate: 2, Per: 1500 * time.Millisecond, Burst: 3}}[rng.IntN(4)]
				what = fmt.Sprintf("setLimit(%+v, %v)", l, ns)
				var err error
				if l.Rate == 0 {
					err = p.SetLimit(ctx, Limit{}, ns...)
				} else {
					err = p.SetLimit(ctx, l, ns...)
				}
				if want := m.setLimit(l, ns); !sameErr(err, want) {
					fail(err, want)
				}
			case op >= 15 && op < 17:
				key := fmt.Sprintf("session-%d", rng.IntN(4))
				what = fmt.Sprintf("pickSticky(%q)", key)
				got, err := p.PickSticky(ctx, key)
				want, werr := m.pickSticky(key)
				if got != want || !sameErr(err, werr) {
					fail(fmt.Sprintf("%q %v", got, err), fmt.Sprintf("%q %v", want, werr))
				}
			case op < 15:
				d := []int64{1, 499, 500, 1000, 2500}[rng.IntN(5)]
				what = fmt.Sprintf("advance the clock %d ms", d)
				m.now += d
				setClock(m.now)
			case op == 20 || op == 21:
				ttl := []int64{1, 500, 1000, 3000}[rng.IntN(4)]
				what = fmt.Sprintf("acquire(%d ms)", ttl)
				got, err := p.PickLease(ctx, time.Duration(ttl)*time.Millisecond)
				want, werr := m.acquire(ttl)
				if got != want || !sameErr(err, werr) {
					fail(fmt.Sprintf("%+v %v", got, err), fmt.Sprintf("%+v %v", want, werr))
				}
				if err == nil {
					held = append(held, got)
				}
			case op == 22:
				if len(held) == 0 {
					continue
				}
				l := held[rng.IntN(len(held))]
				what = fmt.Sprintf("release(%+v)", l)
				got, err := p.Release(ctx, l)
				if want := m.release(l); err != nil || got != want {
					fail(fmt.Sprint(got, err), want)
				}
			case op == 23:
				ns, n := sub(), []int{0, 1, 1, 2, 3}[rng.IntN(5)]
				what = fmt.Sprintf("setConcurrency(%d, %v)", n, ns)
				var err error
				if n == 0 {
					err = p.SetConcurrency(ctx, 0, ns...)
				} else {
					err = p.SetConcurrency(ctx, n, ns...)
				}
				if want := m.setConcurrency(n, ns); !sameErr(err, want) {
					fail(err, want)
				}
			default:
				id := ""
				if rng.IntN(3) == 0 {
					id = fmt.Sprintf("req-%d", rng.IntN(6))
				}
				what = fmt.Sprintf("pick(%q)", id)
				var got string
				var err error
				if id == "" {
					got, err = p.Pick(ctx)
				} else {
					got, err = p.PickID(ctx, id)
				}
				want, werr := m.pick(id)
				if got != want || !sameErr(err, werr) {
					fail(fmt.Sprintf("%q %v", got, err), fmt.Sprintf("%q %v", want, werr))
				}
			}
			if rng.IntN(3) != 0 {
				// Not every step: List settles expired leases, and the
				// member's own settling in Acquire is checked only when
				// some are left.
				continue
			}
			got, err := p.list(ctx)
			if !m.exists() {
				if !errors.Is(err, ErrUnknownPool) {
					t.Fatalf("seed %d step %d: after %s, list of a pool never created: %v", seed, step, what, err)
				}
				continue
			}
			if want := m.list(); err != nil || show(got) != show(want) {
				t.Fatalf("seed %d step %d: after %s the pool is\n %v %v\nthe model\n %v", seed, step, what, show(got), err, show(want))
			}
		}
	}
}

// show prints members with their limits (not the limits' addresses).
func show(ms []Member) string {
	out := ""
	for _, x := range ms {
		l := x.Limit
		x.Limit = nil
		out += fmt.Sprintf("%v", x)
		if l != nil {
			out += fmt.Sprintf("+limit%v", *l)
		}
		out += " "
	}
	return out
}
