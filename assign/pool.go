package assign

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

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

// ParseRestorePolicy reads a policy's name: current-minimum, keep-history
// or zero.
func ParseRestorePolicy(s string) (RestorePolicy, error) {
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

// UnmarshalText reads a policy's name as ParseRestorePolicy does, so that
// a policy can be a flag (flag.TextVar) or a field of a JSON body.
func (p *RestorePolicy) UnmarshalText(text []byte) error {
	v, err := ParseRestorePolicy(string(text))
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
	r    *runner
	opts options

	// pick is the EVALSHA of a pick without a request id, built once and
	// pinned (never recycled by the client): every such pick sends the
	// same bytes, and building it per pick was a measurable share of the
	// client's CPU, which shares the machine with Redis.
	pick rueidis.Completed
}

type options struct {
	requestTTL time.Duration
}

// Option configures a Pool or Leases.
type Option func(*options)

// WithRequestTTL sets how long a request id's pick is remembered, from 1 s
// to 7 days (default 10 minutes): a pick retried with the same id within
// that time returns the first answer.
func WithRequestTTL(d time.Duration) Option { return func(o *options) { o.requestTTL = d } }

func defaultOptions() options { return options{requestTTL: 10 * time.Minute} }

// New opens the pool name on the Redis that c talks to. It sends nothing:
// a pool comes into being with its first Add.
func New(c *Client, name string, opts ...Option) (*Pool, error) {
	if c == nil || c.rc == nil {
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
	p := &Pool{name: name, k: lua.PoolKeys(name), r: &runner{c: c.rc}, opts: o}
	p.pick = evalsha(c.rc, lua.Pick, []string{p.k.Active, p.k.Removed}, nil).Pin()
	return p, nil
}

// Name returns the pool's name.
func (p *Pool) Name() string { return p.name }

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
	res := p.r.runPinned(ctx, p.pick, lua.Pick, []string{p.k.Active, p.k.Removed}, nil)
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
	res := p.r.run(ctx, lua.Pick, p.idKeys(id), p.idArgs())
	return p.member("pick", res)
}

func (p *Pool) idKeys(id string) []string {
	return []string{p.k.Active, p.k.Removed, p.k.ReqPrefix + id}
}

func (p *Pool) idArgs() []string {
	return []string{strconv.FormatInt(p.opts.requestTTL.Milliseconds(), 10)}
}

func (p *Pool) member(op string, res rueidis.RedisResult) (string, error) {
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
// to the server in scripts of up to PickChunk picks each (one script for a
// batch of up to PickChunk): a script makes its picks back to back, with
// nothing between them, so they are exactly the members n single picks in
// a row would get; other workers' picks may fall between two scripts of a
// larger batch. Calling a script is most of what a pick costs the server,
// and a batch pays it once per PickChunk picks instead of once per pick.
// Scripts refused with NOSCRIPT are sent again, and only those. The picks
// of one script share its outcome: all made, or none (ErrPoolEmpty,
// ErrUnknownPool), or all ambiguous.
func (p *Pool) PickBatch(ctx context.Context, n int) ([]Result, error) {
	if n < 1 || n > MaxBatch {
		return nil, fmt.Errorf("%w: batch of %d picks: want 1 to %d", ErrInvalid, n, MaxBatch)
	}
	if err := notStarted(ctx); err != nil {
		return nil, err
	}
	k := []string{p.k.Active, p.k.Removed}
	size := func(i int) int { return min(PickChunk, n-i*PickChunk) }
	args := func(i int) ([]string, []string) { return k, []string{strconv.Itoa(size(i))} }
	cmds := make(rueidis.Commands, (n+PickChunk-1)/PickChunk)
	for i := range cmds {
		keys, a := args(i)
		cmds[i] = evalsha(p.r.c, lua.PickMany, keys, a)
	}
	out := make([]Result, 0, n)
	for i, r := range p.r.runManyBuilt(ctx, cmds, lua.PickMany, args) {
		ms, err := r.AsStrSlice()
		if err != nil {
			err = classify("pick", p.name, err)
		} else if len(ms) != size(i) {
			// Not a reply pick_many.lua gives: a script of the same name
			// that is not ours, say.
			err = fmt.Errorf("assign: pick on pool %q: the server answered %d members for %d picks", p.name, len(ms), size(i))
		}
		if err != nil {
			for range size(i) {
				out = append(out, Result{Err: err})
			}
			continue
		}
		for _, m := range ms {
			out = append(out, Result{Member: m})
		}
	}
	return out, nil
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
	keys := make([][]string, len(ids))
	args := make([][]string, len(ids))
	a := p.idArgs()
	for i, id := range ids {
		keys[i], args[i] = p.idKeys(id), a
	}
	return p.results(p.r.runMany(ctx, lua.Pick, keys, args)), nil
}

func (p *Pool) results(res []rueidis.RedisResult) []Result {
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

// Add makes members eligible with the agreed initial count. A member
// already active keeps its count (ZADD NX: nothing is overwritten), and a
// removed member stays removed. Adding to a pool that does not exist yet
// creates it.
func (p *Pool) Add(ctx context.Context, count int64, members ...string) (AddResult, error) {
	if err := checkCount("initial count", count); err != nil {
		return AddResult{}, err
	}
	return p.add(ctx, "count", count, members)
}

// AddAtMinimum is Add with the active members' current minimum as the
// initial count (0 for a pool with no active member): newcomers start
// level with the least used instead of piling up work on themselves.
func (p *Pool) AddAtMinimum(ctx context.Context, members ...string) (AddResult, error) {
	return p.add(ctx, "min", 0, members)
}

func (p *Pool) add(ctx context.Context, mode string, count int64, members []string) (AddResult, error) {
	if err := checkMembers("add", members); err != nil {
		return AddResult{}, err
	}
	args := append([]string{mode, strconv.FormatInt(count, 10)}, members...)
	v, err := p.r.run(ctx, lua.Add, []string{p.k.Active, p.k.Removed}, args).AsIntSlice()
	if err != nil {
		return AddResult{}, classify("add", p.name, err)
	}
	if len(v) != 3 {
		return AddResult{}, fmt.Errorf("assign: add: unexpected answer %v", v)
	}
	return AddResult{Added: int(v[0]), Active: int(v[1]), Removed: int(v[2])}, nil
}

// Remove makes members ineligible and keeps their counts for Restore. All
// or nothing: if one of them is not active, nothing changes
// (ErrUnknownMember).
func (p *Pool) Remove(ctx context.Context, members ...string) error {
	if err := checkMembers("remove", members); err != nil {
		return err
	}
	_, err := p.r.run(ctx, lua.Remove, []string{p.k.Active, p.k.Removed}, members).AsInt64()
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
	_, err := p.r.run(ctx, lua.Restore, []string{p.k.Active, p.k.Removed}, args).AsInt64()
	return classify("restore", p.name, err)
}

// Member is one member of a pool as List reports it.
type Member struct {
	Name     string `json:"member"`
	Count    int64  `json:"count"`    // assignments (for a removed member, when it left)
	Active   bool   `json:"active"`   // eligible for picks
	Failures int64  `json:"failures"` // failures reported with RecordFailure
}

// List returns the pool at one instant: the active members in pick order
// (count, then name), then the removed ones by name.
func (p *Pool) List(ctx context.Context) ([]Member, error) {
	arr, err := p.r.run(ctx, lua.List, []string{p.k.Active, p.k.Removed, p.k.Failures}, nil).ToArray()
	if err != nil {
		return nil, classify("list", p.name, err)
	}
	if len(arr) != 3 {
		return nil, fmt.Errorf("assign: list: unexpected answer of %d parts", len(arr))
	}
	active, err1 := pairs(arr[0])
	removed, err2 := pairs(arr[1])
	failures, err3 := pairs(arr[2])
	if err := firstErr(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("assign: list: %w", err)
	}
	fails := map[string]int64{}
	for _, f := range failures {
		fails[f.name] = f.n
	}
	out := make([]Member, 0, len(active)+len(removed))
	for _, a := range active {
		out = append(out, Member{Name: a.name, Count: a.n, Active: true, Failures: fails[a.name]})
	}
	slices.SortFunc(removed, func(a, b pair) int { return strings.Compare(a.name, b.name) })
	for _, r := range removed {
		out = append(out, Member{Name: r.name, Count: r.n, Failures: fails[r.name]})
	}
	return out, nil
}

// RecordFailure counts a failed request through member, apart from its
// assignments: the score counts assignments, whatever became of them.
func (p *Pool) RecordFailure(ctx context.Context, member string) error {
	if err := checkMember(member); err != nil {
		return err
	}
	err := p.r.c.Do(ctx, p.r.c.B().Hincrby().Key(p.k.Failures).Field(member).Increment(1).Build()).Error()
	return classify("record failure", p.name, err)
}

// Delete removes the whole pool: members, removed members, failures, its
// creator. Request-id records expire on their own.
func (p *Pool) Delete(ctx context.Context) error {
	err := p.r.c.Do(ctx, p.r.c.B().Del().Key(p.k.Active, p.k.Removed, p.k.Failures, p.k.Owner).Build()).Error()
	return classify("delete", p.name, err)
}

type pair struct {
	name string
	n    int64
}

// pairs reads a flat name, number list (WITHSCORES or HGETALL).
func pairs(m rueidis.RedisMessage) ([]pair, error) {
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
		out = append(out, pair{xs[i], int64(f)})
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
