package assign

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/afloat/afloat/assign/internal/lua"
)

// RestorePolicy says what count a removed member gets when it rejoins.
type RestorePolicy int

const (
	// RestoreCurrentMinimum (the default, the zero value) starts the member
	// at the active members' current minimum: it is next in line with the
	// least used, and gets no burst. With no active member it keeps its
	// historical count.
	RestoreCurrentMinimum RestorePolicy = iota
	// RestoreKeepHistory restores the count it had when it left: fair over
	// the pool's whole life, but a member that left while the others kept
	// working rejoins far below them and takes every pick until it has
	// caught up.
	RestoreKeepHistory
	// RestoreZero starts it at zero: the pile-on the seed warns about —
	// every worker's next picks go to it until its count reaches the
	// others'. Use it only for a pool that is reset as a whole.
	RestoreZero
)

var policyNames = [...]string{"current-minimum", "keep-history", "zero"}
var policyArgs = [...]string{"min", "keep", "zero"}

func (p RestorePolicy) String() string {
	if p < 0 || int(p) >= len(policyNames) {
		return "RestorePolicy(" + strconv.Itoa(int(p)) + ")"
	}
	return policyNames[p]
}

// parseRestorePolicy reads a policy's name: current-minimum, keep-history
// or zero.
func parseRestorePolicy(s string) (RestorePolicy, error) {
	for i, n := range policyNames {
		if s == n {
			return RestorePolicy(i), nil
		}
	}
	return 0, fmt.Errorf("%w: restore policy %q: want %s", ErrInvalid, clip(s), strings.Join(policyNames[:], ", "))
}

// MarshalText writes the policy's name, as String does; a policy out of
// range is an error.
func (p RestorePolicy) MarshalText() ([]byte, error) {
	if p < 0 || int(p) >= len(policyNames) {
		return nil, fmt.Errorf("%w: restore policy %d: want %s", ErrInvalid, int(p), strings.Join(policyNames[:], ", "))
	}
	return []byte(policyNames[p]), nil
}

// UnmarshalText reads a policy's name — current-minimum, keep-history or
// zero — so that a policy can be a flag (flag.TextVar) or a field of a
// JSON body. Another name is ErrInvalid, and p is left as it was.
func (p *RestorePolicy) UnmarshalText(text []byte) error {
	v, err := parseRestorePolicy(string(text))
	if err == nil {
		*p = v
	}
	return err
}

// Pool is a least-used pool of members kept in Redis: a sorted set of the
// active members with their assignment counts, a hash of the removed
// members' counts, and a hash of failures. Every worker that opens a pool
// of the same name on the same Redis shares it. It is safe for concurrent
// use.
type Pool struct {
	name string
	k    lua.Keys
	keys []string // the five keys every pool script starts with
	s    *lua.Set // lua.Pool; lua.TestClock only in this package's tests
	r    *runner
	opts options

	// pick is the call of a pick without a request id, built once and
	// pinned (call.built): every such pick sends the same bytes.
	pick *call

	// reclaim is how many expired leases of the pool a PickLease settles
	// first (reclaimOnAcquire; the property test lowers it, so that the
	// member's own reclaim is what it checks).
	reclaim int
}

type options struct {
	requestTTL, stickyTTL time.Duration
}

// Option configures a Pool or Leases.
type Option func(*options)

// WithRequestTTL sets how long a request id's pick is remembered, from 1 s
// to 7 days (default 10 minutes): a pick retried with the same id within
// that time returns the first answer.
func WithRequestTTL(d time.Duration) Option { return func(o *options) { o.requestTTL = d } }

// WithStickyTTL sets how long a sticky key keeps its member after its
// last pick (PickSticky), from 1 s to 7 days (default 30 minutes).
func WithStickyTTL(d time.Duration) Option { return func(o *options) { o.stickyTTL = d } }

func defaultOptions() options {
	return options{requestTTL: 10 * time.Minute, stickyTTL: 30 * time.Minute}
}

// New opens the pool name on the Redis that c talks to. It sends nothing:
// a pool comes into being with its first Add.
func New(c *Client, name string, opts ...Option) (*Pool, error) {
	if c == nil || c.conn == nil {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalid)
	}
	if err := checkPoolName(name); err != nil {
		return nil, err
	}
	o := defaultOptions()
	for _, f := range opts {
		f(&o)
	}
	if err := checkDuration("request TTL", o.requestTTL, time.Second, 7*24*time.Hour); err != nil {
		return nil, err
	}
	if err := checkDuration("sticky TTL", o.stickyTTL, time.Second, 7*24*time.Hour); err != nil {
		return nil, err
	}
	p := &Pool{name: name, k: lua.PoolKeys(name), s: lua.Pool, r: &runner{c: c.conn}, opts: o, reclaim: reclaimOnAcquire}
	p.keys = []string{p.k.Active, p.k.Removed, p.k.Cooling, p.k.Meta, p.k.Settings}
	p.r.upgrade = p.keys
	p.pick = &call{s: p.s.Pick, keys: p.keys}
	c.conn.pin(p.pick)
	return p, nil
}

// ScriptReloads returns how many times a script had to be sent again
// because the server had lost it (NOSCRIPT): after a restart, a failover or
// SCRIPT FLUSH.
func (p *Pool) ScriptReloads() int64 { return p.r.reloads.Load() }

// Pick assigns the least-used active member and counts the assignment, in
// one atomic step on the server: the member with the lowest count, ties
// going to the lowest name in byte order (as ZRANGE orders equal scores).
// It returns ErrPoolEmpty (nothing counted) when no member is active,
// ErrUnknownPool for a pool that never had one, and ErrAmbiguous when the
// connection was lost in flight.
func (p *Pool) Pick(ctx context.Context) (string, error) {
	if err := notStarted(ctx); err != nil {
		return "", err
	}
	res := p.r.runCall(ctx, p.pick)
	return p.member("pick", res)
}

// PickID is Pick with a request id: the script records id → member (with
// the pool's request TTL) in the same atomic step, so a retry after
// ErrAmbiguous returns the member of the first attempt if it ran, and
// counts nothing twice. Use one id per logical request.
func (p *Pool) PickID(ctx context.Context, id string) (string, error) {
	if err := checkRequestID(id); err != nil {
		return "", err
	}
	if err := notStarted(ctx); err != nil {
		return "", err
	}
	res := p.r.run(ctx, p.s.Pick, p.idKeys(id), p.idArgs())
	return p.member("pick", res)
}

// PickSticky is Pick for a key that should stay on one member — a
// session with cookies, a conversation, a crawl of one site: while the
// member the key last got is active and not cooling, the key gets it again
// (counted); otherwise, or the first time, the key gets the least-used
// member and keeps it. The record lives for the pool's sticky TTL
// (WithStickyTTL) from the key's last pick, in Redis, so every worker
// sends the key to the same member. A key is 1 to maxRequestID bytes of
// UTF-8.
func (p *Pool) PickSticky(ctx context.Context, key string) (string, error) {
	if key == "" || len(key) > maxRequestID || !utf8.ValidString(key) {
		return "", fmt.Errorf("%w: sticky key %q: want 1 to %d bytes of UTF-8", ErrInvalid, clip(key), maxRequestID)
	}
	if err := notStarted(ctx); err != nil {
		return "", err
	}
	keys := append(p.keys[:len(p.keys):len(p.keys)], p.k.StickyPrefix+key)
	res := p.r.run(ctx, p.s.PickSticky, keys, []string{strconv.FormatInt(p.opts.stickyTTL.Milliseconds(), 10)})
	return p.member("pick", res)
}

func (p *Pool) idKeys(id string) []string {
	return append(p.keys[:len(p.keys):len(p.keys)], p.k.ReqPrefix+id)
}

func (p *Pool) idArgs() []string {
	return []string{strconv.FormatInt(p.opts.requestTTL.Milliseconds(), 10)}
}

func (p *Pool) member(op string, res reply) (string, error) {
	m, err := res.ToString()
	if err != nil {
		return "", classify(op, p.name, err)
	}
	return m, nil
}

// Result is the outcome of one pick of a batch.
type Result struct {
	Member string
	Err    error
}

// PickBatch makes n picks in one round trip, for throughput. The picks go
// to the server in scripts of up to pickChunk picks each (one script for a
// batch of up to pickChunk): a script makes its picks back to back, with
// nothing between them, so they are exactly the members n single picks in
// a row would get; other workers' picks may fall between two scripts of a
// larger batch. Calling a script is most of what a pick costs the server,
// and a batch pays it once per pickChunk picks instead of once per pick.
// Scripts refused with NOSCRIPT are sent again, and only those. The picks
// of one script share its outcome: all made, or none (ErrPoolEmpty,
// ErrUnknownPool, a *CoolingError), or all ambiguous — or, when a rate
// limit cools members during the batch, the picks up to the one that
// finds none, which the rest share.
func (p *Pool) PickBatch(ctx context.Context, n int) ([]Result, error) {
	if n < 1 || n > MaxBatch {
		return nil, fmt.Errorf("%w: batch of %d picks: want 1 to %d", ErrInvalid, n, MaxBatch)
	}
	if err := notStarted(ctx); err != nil {
		return nil, err
	}
	size := func(i int) int { return min(pickChunk, n-i*pickChunk) }
	calls := make([]*call, (n+pickChunk-1)/pickChunk)
	for i := range calls {
		calls[i] = &call{s: p.s.PickMany, keys: p.keys, args: []string{strconv.Itoa(size(i))}}
	}
	out := make([]Result, 0, n)
	for i, r := range p.r.runMany(ctx, calls) {
		out = append(out, p.chunk(r, size(i))...)
	}
	return out, nil
}

// chunk reads one pick_many answer of n picks: the members picked, then
// maybe the answer of the pick that found none, which the picks not made
// after it share.
func (p *Pool) chunk(r reply, n int) []Result {
	out := make([]Result, 0, n)
	fill := func(err error) []Result {
		for len(out) < n {
			out = append(out, Result{Err: err})
		}
		return out
	}
	arr, err := r.ToArray()
	if err != nil {
		return fill(classify("pick", p.name, err))
	}
	if len(arr) > n {
		// Not a reply pick_many.lua gives: a script of the same name that
		// is not ours, say.
		return fill(fmt.Errorf("assign: pick on pool %q: the server answered %d members for %d picks", p.name, len(arr), n))
	}
	for j, x := range arr {
		m, err := x.ToString()
		if err == nil {
			out = append(out, Result{Member: m})
			continue
		}
		if j != len(arr)-1 {
			return fill(fmt.Errorf("assign: pick on pool %q: the server answered a refusal before a member", p.name))
		}
		return fill(classify("pick", p.name, err))
	}
	if len(out) < n {
		return fill(fmt.Errorf("assign: pick on pool %q: the server answered %d members for %d picks", p.name, len(arr), n))
	}
	return out
}

// PickBatchIDs is PickBatch with a request id for each pick (see PickID).
func (p *Pool) PickBatchIDs(ctx context.Context, ids []string) ([]Result, error) {
	if len(ids) < 1 || len(ids) > MaxBatch {
		return nil, fmt.Errorf("%w: batch of %d picks: want 1 to %d", ErrInvalid, len(ids), MaxBatch)
	}
	for _, id := range ids {
		if err := checkRequestID(id); err != nil {
			return nil, err
		}
	}
	if err := notStarted(ctx); err != nil {
		return nil, err
	}
	calls := make([]*call, len(ids))
	a := p.idArgs()
	for i, id := range ids {
		calls[i] = &call{s: p.s.Pick, keys: p.idKeys(id), args: a}
	}
	return p.results(p.r.runMany(ctx, calls)), nil
}

func (p *Pool) results(res []reply) []Result {
	out := make([]Result, len(res))
	for i, r := range res {
		out[i].Member, out[i].Err = p.member("pick", r)
	}
	return out
}

// AddResult says what Add did with each member.
type AddResult struct {
	Added   int // joined the pool
	Active  int // were active already: their counts are untouched
	Removed int // are removed: left removed (Restore brings them back)
}

// AtMinimum is the count for Add and AddWeighted that starts members
// level with the least used: at the active members' current minimum (0
// for a pool with no active member), instead of piling work on them until
// they catch up with the rest. It is no count a member can have, so that
// a count computed wrong is refused, not taken for it.
const AtMinimum = math.MinInt64

// Add makes members eligible with the agreed initial count (0 to 2^53),
// or AtMinimum. A member already active (cooling or not) keeps its count
// (nothing is overwritten), and a removed member stays removed. Adding to
// a pool that does not exist yet creates it.
func (p *Pool) Add(ctx context.Context, count int64, members ...string) (AddResult, error) {
	return p.AddWeighted(ctx, 1, count, members...)
}

// AddWeighted is Add for members of weight 1 to 1000: a member of weight w
// takes w times the share of picks of a member of weight 1 (its score is
// count / w); AtMinimum starts it where the lowest score puts a member of
// that weight, ceil(score × w). Members already in the pool keep their
// weights (SetWeight changes them).
func (p *Pool) AddWeighted(ctx context.Context, weight int, count int64, members ...string) (AddResult, error) {
	if count == AtMinimum {
		return p.add(ctx, "min", weight, 0, members)
	}
	if err := checkCount("initial count", count); err != nil {
		return AddResult{}, err
	}
	return p.add(ctx, "count", weight, count, members)
}

func (p *Pool) add(ctx context.Context, mode string, weight int, count int64, members []string) (AddResult, error) {
	if err := checkWeight(weight); err != nil {
		return AddResult{}, err
	}
	if err := checkMembers("add", members); err != nil {
		return AddResult{}, err
	}
	args := append([]string{mode, strconv.FormatInt(count, 10), strconv.Itoa(weight)}, members...)
	v, err := p.r.run(ctx, p.s.Add, p.keys, args).AsIntSlice()
	if err != nil {
		return AddResult{}, classify("add", p.name, err)
	}
	if len(v) != 3 {
		return AddResult{}, fmt.Errorf("assign: add: unexpected answer %v", v)
	}
	return AddResult{Added: int(v[0]), Active: int(v[1]), Removed: int(v[2])}, nil
}

// Remove makes members ineligible and keeps their counts (and weights)
// for Restore; a cooling member's cooldown ends with it. All or nothing:
// if one of them is neither active nor cooling, nothing changes
// (ErrUnknownMember).
func (p *Pool) Remove(ctx context.Context, members ...string) error {
	if err := checkMembers("remove", members); err != nil {
		return err
	}
	_, err := p.r.run(ctx, p.s.Remove, p.keys, members).AsInt64()
	return classify("remove", p.name, err)
}

// Restore makes removed members eligible again with the count the policy
// gives them. All or nothing, like Remove.
func (p *Pool) Restore(ctx context.Context, policy RestorePolicy, members ...string) error {
	if policy < 0 || int(policy) >= len(policyArgs) {
		return fmt.Errorf("%w: restore policy %d: want %s", ErrInvalid, int(policy), strings.Join(policyNames[:], ", "))
	}
	if err := checkMembers("restore", members); err != nil {
		return err
	}
	args := append([]string{policyArgs[policy]}, members...)
	_, err := p.r.run(ctx, p.s.Restore, p.leaseKeys(), args).AsInt64()
	return classify("restore", p.name, err)
}

// Member is one member of a pool as Status reports it.
type Member struct {
	Name  string `json:"member"`
	Count int64  `json:"count"` // assignments (for a removed member, when it left)
	// Active: in the pool (not removed); picks skip it while it cools.
	Active   bool  `json:"active"`
	Failures int64 `json:"failures"` // failures reported with RecordFailure
	// Streak counts its failures in a row, since its last success.
	Streak int64 `json:"streak,omitempty"`
	// Weight is its share of picks against a member of weight 1.
	Weight int `json:"weight,omitempty"`
	// Limit is its rate limit, nil for none.
	Limit *Limit `json:"limit,omitempty"`
	// Concurrency is its cap on leases in flight (SetConcurrency), 0 for
	// none; InFlight its leases open (PickLease), whatever its cap.
	Concurrency int   `json:"concurrency,omitempty"`
	InFlight    int64 `json:"in_flight,omitempty"`
	// CoolingUntil is when its cooldown ends by Redis's clock; zero when
	// it is not cooling. For a member full under its concurrency cap
	// (InFlight at Concurrency), it is when it has room at the latest (the
	// lease that brings it under its cap reaches its deadline), or its
	// cooldown ends if later.
	CoolingUntil time.Time `json:"cooling_until,omitzero"`
}

// Status is a pool at one instant: its members, settings, creator and
// Redis's clock.
type Status struct {
	Pool     string    `json:"pool"`
	Now      time.Time `json:"now"` // Redis's clock when it was read
	Settings Settings  `json:"settings"`
	// Owner is the creator Create recorded, "" for a pool Create did not
	// make.
	Owner string `json:"owner,omitempty"`
	// Members are the active members not cooling in pick order (count /
	// weight, then name), the cooling ones by the end of their cooldown,
	// then the removed ones by name.
	Members []Member `json:"members"`
	// Leases are the first 100 leases open (PickLease) to reach their
	// deadline; OpenLeases counts them all.
	Leases     []Lease `json:"leases,omitempty"`
	OpenLeases int     `json:"open_leases"`
}

// statusLeases is how many of the leases open Status lists.
const statusLeases = 100

// Status returns the pool's members, settings and creator and Redis's
// clock, read in one atomic step, once the cooldowns that have ended by
// then are over and the expired leases (up to 10,000) settled.
func (p *Pool) Status(ctx context.Context) (Status, error) {
	keys := append(p.keys[:len(p.keys):len(p.keys)], p.k.Failures, p.k.Streaks, p.k.PoolLeases, p.k.PoolLeaseIndex, p.k.Owner)
	args := []string{strconv.Itoa(reclaimPerCall), strconv.Itoa(statusLeases)}
	arr, err := p.r.run(ctx, p.s.List, keys, args).ToArray()
	if err != nil {
		return Status{}, classify("list", p.name, err)
	}
	if len(arr) != 11 {
		return Status{}, fmt.Errorf("assign: list: unexpected answer of %d parts", len(arr))
	}
	var parts [6][]pair
	for i := range parts {
		if i == 4 {
			continue // meta: read below, not all of it numbers
		}
		if parts[i], err = pairs(arr[i]); err != nil {
			return Status{}, fmt.Errorf("assign: list: %w", err)
		}
	}
	metaKV, err := arr[4].AsStrSlice()
	if err != nil {
		return Status{}, fmt.Errorf("assign: list: meta: %w", err)
	}
	limits := map[string]*Limit{}
	weights := map[string]int64{}
	for i := 0; i+1 < len(metaKV); i += 2 {
		k, v := metaKV[i], metaKV[i+1]
		if name, ok := strings.CutPrefix(k, "m|"); ok {
			// The weight, then, for a limited member, its limit.
			ws, ls, limited := strings.Cut(v, " ")
			w, err := strconv.ParseInt(ws, 10, 64)
			if err != nil {
				return Status{}, fmt.Errorf("assign: list: the weight of %q, %q: %w", name, v, err)
			}
			weights[name] = w
			if !limited {
				continue
			}
			var t float64
			var l Limit
			var perMS int64
			if _, err := fmt.Sscanf(ls, "%g %d %d %d", &t, &l.Burst, &l.Rate, &perMS); err != nil {
				return Status{}, fmt.Errorf("assign: list: the limit of %q, %q: %w", name, v, err)
			}
			l.Per = time.Duration(perMS) * time.Millisecond
			limits[name] = &l
			continue
		}
		if strings.HasPrefix(k, "t|") || k == "due" || k == "table" {
			continue // a GCRA time; the pool's next release (a bound the scripts keep); the encoding's marker
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return Status{}, fmt.Errorf("assign: list: %q of meta: %w", k, err)
		}
		parts[4] = append(parts[4], pair{k, int64(f), f})
	}
	nowMS, err := arr[7].ToString()
	if err != nil {
		return Status{}, fmt.Errorf("assign: list: %w", err)
	}
	now, err := strconv.ParseInt(nowMS, 10, 64)
	if err != nil {
		return Status{}, fmt.Errorf("assign: list: the clock %q: %w", nowMS, err)
	}
	settings, err := arr[6].AsStrSlice()
	if err != nil {
		return Status{}, fmt.Errorf("assign: list: settings: %w", err)
	}
	active, removed, failures, cooling, meta, streaks := parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]
	index := func(ps []pair) map[string]int64 {
		out := make(map[string]int64, len(ps))
		for _, x := range ps {
			out[x.name] = x.n
		}
		return out
	}
	fails, streak, mt := index(failures), index(streaks), index(meta)
	member := func(name string, count int64) Member {
		w := int64(1)
		if v, ok := weights[name]; ok {
			w = v
		}
		return Member{Name: name, Count: count, Failures: fails[name], Streak: streak[name], Weight: int(w), Limit: limits[name],
			Concurrency: int(mt["k|"+name]), InFlight: mt["f|"+name]}
	}
	out := make([]Member, 0, len(active)+len(cooling)+len(removed))
	for _, a := range active {
		// A weighted member's score is count / weight, written with 17
		// digits: the count is round(score × weight), as the scripts read
		// it, exact for counts below 2^51.
		m := member(a.name, a.n)
		if m.Weight != 1 {
			m.Count = int64(math.Round(a.f * float64(m.Weight)))
		}
		m.Active = true
		out = append(out, m)
	}
	for _, c := range cooling {
		m := member(c.name, mt["p|"+c.name])
		m.Active, m.CoolingUntil = true, time.UnixMilli(c.n)
		out = append(out, m)
	}
	slices.SortFunc(removed, func(a, b pair) int { return strings.Compare(a.name, b.name) })
	for _, r := range removed {
		out = append(out, member(r.name, r.n))
	}
	st := Status{Pool: p.name, Now: time.UnixMilli(now), Members: out}
	st.Settings = settingsFrom(settings)
	held, err := pairs(arr[8])
	if err != nil {
		return Status{}, fmt.Errorf("assign: list: leases: %w", err)
	}
	for _, h := range held {
		id, member, ok := strings.Cut(h.name, " ")
		if !ok {
			return Status{}, fmt.Errorf("assign: list: lease %q", h.name)
		}
		st.Leases = append(st.Leases, Lease{Member: member, ID: id, Deadline: time.UnixMilli(h.n)})
	}
	open, err := arr[9].AsInt64()
	if err != nil {
		return Status{}, fmt.Errorf("assign: list: leases open: %w", err)
	}
	st.OpenLeases = int(open)
	if st.Owner, err = arr[10].ToString(); err == errNil {
		st.Owner, err = "", nil // no creator
	}
	if err != nil {
		return Status{}, fmt.Errorf("assign: list: owner: %w", err)
	}
	return st, nil
}

// Delete removes everything the pool made on the Redis: its members,
// removed members, failures, cooldowns, weights, limits, streaks,
// settings, leases and creator at once — picks answer ErrUnknownPool from
// then on — and then the records it keeps by request id (PickID,
// PickBatchIDs, RecordFailureID) and by sticky key, which it finds by a
// SCAN of the server's keys (by the pool's prefix, in steps of 1,000
// keys, each a short script, so that a large database is not held up).
// A least-in-flight Leases of the same name is apart, and stays.
func (p *Pool) Delete(ctx context.Context) error {
	k := p.k
	err := p.r.c.do(ctx, "DEL", []string{k.Active, k.Removed, k.Failures, k.Owner,
		k.Cooling, k.Meta, k.Streaks, k.Settings, k.PoolLeases, k.PoolLeaseIndex}).Error()
	if err != nil {
		return classify("delete", p.name, err)
	}
	args := []string{"0", k.Prefix + "*", strconv.Itoa(sweepStep), k.Inflight, k.Parked, k.Leases, k.LeaseMembers, k.LeaseSeq}
	for {
		if err := notStarted(ctx); err != nil {
			return err
		}
		// do, not run: a pool upgraded to the scripts' layout of meta has
		// none to upgrade now.
		xs, err := p.r.do(ctx, &call{s: lua.Sweep, keys: []string{k.Active}, args: args}).AsStrSlice()
		if err != nil {
			return classify("delete", p.name, err)
		}
		if len(xs) != 2 {
			return fmt.Errorf("assign: delete on pool %q: unexpected answer %q", p.name, xs)
		}
		if args[0] = xs[0]; args[0] == "0" {
			return nil
		}
	}
}

// sweepStep is how many keys one step of Delete's sweep looks at.
const sweepStep = 1000

type pair struct {
	name string
	n    int64
	f    float64 // n as read
}

// pairs reads a flat name, number list (WITHSCORES or HGETALL).
func pairs(m reply) ([]pair, error) {
	xs, err := m.AsStrSlice()
	if err != nil {
		return nil, err
	}
	if len(xs)%2 != 0 {
		return nil, fmt.Errorf("odd list of %d", len(xs))
	}
	out := make([]pair, 0, len(xs)/2)
	for i := 0; i < len(xs); i += 2 {
		f, err := strconv.ParseFloat(xs[i+1], 64)
		if err != nil {
			return nil, fmt.Errorf("count of %q: %w", xs[i], err)
		}
		out = append(out, pair{xs[i], int64(f), f})
	}
	return out, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
