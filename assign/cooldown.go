package assign

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limits of cooldowns, weights and failure streaks.
const (
	// maxCooldown is the longest cooldown a call can ask for.
	maxCooldown = 30 * 24 * time.Hour
	// maxWeight is the largest weight: a member of weight w takes w times
	// the picks of a member of weight 1.
	maxWeight = 1000
	// maxEvictAfter is the longest streak of failures a pool can be set
	// to tolerate before it evicts the member.
	maxEvictAfter = 1000
)

// LastResort says what a pick does when every member of the pool is
// cooling down.
type LastResort int

const (
	// LastResortFail (the default, the zero value) refuses the pick with a
	// *CoolingError carrying when the first member comes back: nothing is
	// counted, and the caller can wait or answer Retry-After.
	LastResortFail LastResort = iota
	// LastResortEarliest picks the member whose cooldown ends first (ties
	// to the lowest name) and counts the pick; it stays cooling.
	LastResortEarliest
)

var lastResortNames = [...]string{"fail", "earliest"}

func (l LastResort) String() string {
	if l < 0 || int(l) >= len(lastResortNames) {
		return "LastResort(" + strconv.Itoa(int(l)) + ")"
	}
	return lastResortNames[l]
}

// parseLastResort reads a last resort's name: fail or earliest.
func parseLastResort(s string) (LastResort, error) {
	for i, n := range lastResortNames {
		if s == n {
			return LastResort(i), nil
		}
	}
	return 0, fmt.Errorf("%w: last resort %q: want %s", ErrInvalid, clip(s), strings.Join(lastResortNames[:], ", "))
}

// MarshalText writes the last resort's name; one out of range is an error.
func (l LastResort) MarshalText() ([]byte, error) {
	if l < 0 || int(l) >= len(lastResortNames) {
		return nil, fmt.Errorf("%w: last resort %d: want %s", ErrInvalid, int(l), strings.Join(lastResortNames[:], ", "))
	}
	return []byte(lastResortNames[l]), nil
}

// UnmarshalText reads a last resort's name, fail or earliest, so that it
// can be a flag (flag.TextVar) or a field of a JSON body. Another name is
// ErrInvalid, and l is left as it was.
func (l *LastResort) UnmarshalText(text []byte) error {
	v, err := parseLastResort(string(text))
	if err == nil {
		*l = v
	}
	return err
}

// Settings are a pool's policies, kept in Redis beside it so that every
// worker applies the same. The zero value is the default: no eviction,
// and a pick fails when every member is cooling.
type Settings struct {
	// EvictAfter is how many failures in a row (RecordFailure, with no
	// RecordSuccess between) evict a member, as Remove does: 0 never, or
	// 1 to 1000. Restore brings it back by its RestorePolicy.
	EvictAfter int `json:"evict_after"`
	// LastResort is what a pick does when every member is cooling.
	LastResort LastResort `json:"last_resort"`
}

// Validate names the first field out of its range.
func (s Settings) Validate() error {
	if s.EvictAfter < 0 || s.EvictAfter > maxEvictAfter {
		return fmt.Errorf("%w: evict after %d failures: want 0 (never) to %d", ErrInvalid, s.EvictAfter, maxEvictAfter)
	}
	if _, err := s.LastResort.MarshalText(); err != nil {
		return err
	}
	return nil
}

func settingsFrom(kv []string) Settings {
	var s Settings
	for i := 0; i+1 < len(kv); i += 2 {
		switch kv[i] {
		case "evict":
			s.EvictAfter, _ = strconv.Atoi(kv[i+1]) // written by SetSettings only
		case "last":
			s.LastResort, _ = parseLastResort(kv[i+1])
		}
	}
	return s
}

// SetSettings replaces the pool's settings; they apply from the next
// script any worker runs. A pool's settings may come before its members,
// and Reset keeps them (Delete does not).
func (p *Pool) SetSettings(ctx context.Context, s Settings) error {
	if err := s.Validate(); err != nil {
		return err
	}
	err := p.r.c.do(ctx, "HSET", []string{p.k.Settings}, "evict", strconv.Itoa(s.EvictAfter), "last", s.LastResort.String()).Error()
	return classify("settings", p.name, err)
}

// Settings returns the pool's settings (the defaults when none were set),
// whether or not the pool has members yet: Status has them too, of a pool
// that has.
func (p *Pool) Settings(ctx context.Context) (Settings, error) {
	kv, err := p.r.c.do(ctx, "HGETALL", []string{p.k.Settings}).AsStrSlice()
	if err != nil {
		return Settings{}, classify("settings", p.name, err)
	}
	return settingsFrom(kv), nil
}

// cooldownUntil puts member aside until the time until on Redis's clock,
// as CooldownFor does for a duration (a time past changes nothing). Only
// the tests, whose clock is the pool's, call it: a caller's own clock is
// not Redis's.
func (p *Pool) cooldownUntil(ctx context.Context, member string, until time.Time) error {
	if err := checkMember(member); err != nil {
		return err
	}
	ms := until.UnixMilli()
	if until.IsZero() || ms < 1 || ms > maxCount {
		return fmt.Errorf("%w: cooldown until %v: want a time after 1970 as Unix milliseconds up to %d", ErrInvalid, until, int64(maxCount))
	}
	_, err := p.cooldown(ctx, "at", ms, []string{member})
	return err
}

// CooldownFor puts members aside for d (1 ms to 30 days) from now on
// Redis's clock: no pick, by any worker, gets them before then, and the
// first script to run after then brings each back by itself with its
// count. It returns when each comes back: the later of this and a
// cooldown already running, which is never cut short. All or nothing: if
// one member is not active, nothing changes (ErrUnknownMember).
func (p *Pool) CooldownFor(ctx context.Context, d time.Duration, members ...string) ([]time.Time, error) {
	if err := checkDuration("cooldown", d, time.Millisecond, maxCooldown); err != nil {
		return nil, err
	}
	if err := checkMembers("cooldown", members); err != nil {
		return nil, err
	}
	return p.cooldown(ctx, "for", ceilMS(d), members)
}

func (p *Pool) cooldown(ctx context.Context, mode string, v int64, members []string) ([]time.Time, error) {
	args := append([]string{mode, strconv.FormatInt(v, 10)}, members...)
	xs, err := p.r.run(ctx, p.s.Cooldown, p.keys, args).AsIntSlice()
	if err != nil {
		return nil, classify("cooldown", p.name, err)
	}
	out := make([]time.Time, len(xs))
	for i, x := range xs {
		out[i] = time.UnixMilli(x)
	}
	return out, nil
}

// ceilMS rounds d up to whole milliseconds, the clock's unit, so that a
// cooldown is never shorter than asked.
func ceilMS(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// FailureOutcome is what RecordFailure did to the member.
type FailureOutcome struct {
	// Member: it was active or cooling (a failure through a member
	// removed, or never in the pool, is only counted).
	Member bool
	// Streak is its failures in a row, this one included.
	Streak int64
	// Evicted: the streak reached the pool's EvictAfter, and the member
	// was removed (its count kept for Restore, its streak reset).
	Evicted bool
	// CoolingUntil is when its cooldown ends, when it is cooling.
	CoolingUntil time.Time
}

// RecordFailure counts a failed request through member, apart from its
// assignments (the score counts assignments, whatever became of them),
// and lengthens its streak of failures in a row: at the pool's
// EvictAfter, the member is evicted. For a failure that said when to come
// back (an HTTP 429 or 503 with Retry-After), unless the streak evicts it,
// the member cools down for retryAfter (0: not at all; up to 30 days) from
// now on Redis's clock, as CooldownFor does — all in one atomic step.
func (p *Pool) RecordFailure(ctx context.Context, member string, retryAfter time.Duration) (FailureOutcome, error) {
	return p.recordFailure(ctx, "", member, retryAfter)
}

// RecordFailureID is RecordFailure with a request id: the script
// records id → outcome (with the pool's request TTL) in the same atomic
// step, so a failure sent again after ErrAmbiguous answers the outcome of
// the first attempt if it ran, and neither the failure nor the streak is
// counted twice. Use one id per failed request; the ids are apart from
// PickID's.
func (p *Pool) RecordFailureID(ctx context.Context, id, member string, retryAfter time.Duration) (FailureOutcome, error) {
	if err := checkRequestID(id); err != nil {
		return FailureOutcome{}, err
	}
	return p.recordFailure(ctx, id, member, retryAfter)
}

func (p *Pool) recordFailure(ctx context.Context, id, member string, retryAfter time.Duration) (FailureOutcome, error) {
	if err := checkMember(member); err != nil {
		return FailureOutcome{}, err
	}
	if retryAfter != 0 {
		if err := checkDuration("retry after", retryAfter, time.Millisecond, maxCooldown); err != nil {
			return FailureOutcome{}, err
		}
	}
	keys := append(p.keys[:len(p.keys):len(p.keys)], p.k.Failures, p.k.Streaks)
	args := []string{member, strconv.FormatInt(ceilMS(retryAfter), 10)}
	if id != "" {
		keys = append(keys, p.k.FailReqPrefix+id)
		args = append(args, p.idArgs()...)
	}
	xs, err := p.r.run(ctx, p.s.Failure, keys, args).AsIntSlice()
	if err != nil {
		return FailureOutcome{}, classify("record failure", p.name, err)
	}
	if len(xs) != 3 {
		return FailureOutcome{}, fmt.Errorf("assign: record failure: unexpected answer %v", xs)
	}
	o := FailureOutcome{Member: xs[1] != 0, Streak: xs[0], Evicted: xs[1] == 3}
	if xs[1] == 2 {
		o.CoolingUntil = time.UnixMilli(xs[2])
	}
	return o, nil
}

// RecordSuccess ends member's streak of failures: the next failure starts
// a new one. It does not end a cooldown.
func (p *Pool) RecordSuccess(ctx context.Context, member string) error {
	if err := checkMember(member); err != nil {
		return err
	}
	err := p.r.c.do(ctx, "HDEL", []string{p.k.Streaks}, member).Error()
	return classify("record success", p.name, err)
}

// SetWeight gives members the weight w (1 to 1000), keeping their
// counts: from the next pick on, a member of weight w takes w times the
// share of a member of weight 1 (its score is count / w, compared exactly
// as the quotient of two integers rounded once). All or nothing: every
// member must be in the pool, active, cooling or removed.
func (p *Pool) SetWeight(ctx context.Context, weight int, members ...string) error {
	if err := checkWeight(weight); err != nil {
		return err
	}
	if err := checkMembers("set weight", members); err != nil {
		return err
	}
	_, err := p.r.run(ctx, p.s.Weight, p.keys, append([]string{strconv.Itoa(weight)}, members...)).AsInt64()
	return classify("set weight", p.name, err)
}

func checkWeight(w int) error {
	if w < 1 || w > maxWeight {
		return fmt.Errorf("%w: weight %d: want 1 to %d", ErrInvalid, w, maxWeight)
	}
	return nil
}

// Limit is a member's rate limit: Rate requests (1 to 1,000,000) per Per
// (whole milliseconds, 1 ms to 24 h), in bursts of up to Burst (1 to
// 1,000,000), enforced by GCRA on Redis's clock. The zero Limit is none.
type Limit struct {
	Rate  int           `json:"rate"`
	Per   time.Duration `json:"per"`
	Burst int           `json:"burst"`
}

// Limits of rate limits.
const (
	maxRate  = 1_000_000
	maxBurst = 1_000_000
	maxPer   = 24 * time.Hour
)

// Validate names the first field out of its range. The zero Limit, none,
// is valid.
func (l Limit) Validate() error {
	if l == (Limit{}) {
		return nil
	}
	switch {
	case l.Rate < 1 || l.Rate > maxRate:
		return fmt.Errorf("%w: rate %d: want 1 to %d requests", ErrInvalid, l.Rate, maxRate)
	case l.Per < time.Millisecond || l.Per > maxPer || l.Per%time.Millisecond != 0:
		return fmt.Errorf("%w: rate per %v: want whole milliseconds from 1ms to %v", ErrInvalid, l.Per, maxPer)
	case l.Burst < 1 || l.Burst > maxBurst:
		return fmt.Errorf("%w: burst %d: want 1 to %d", ErrInvalid, l.Burst, maxBurst)
	}
	return nil
}

// SetLimit gives members a rate limit: a pick never gives a member more
// than l allows. A member with no room left is cooled until it has room
// (CoolingUntil shows when), so picks skip it at no cost, and a pick when
// every member is cooling or full answers as the pool's LastResort says
// (LastResortEarliest picks over the limit). The zero Limit takes the
// members' limits away (a member cooling for want of room stays cooling
// until then). All or nothing: every member must be in the pool, active,
// cooling or removed.
func (p *Pool) SetLimit(ctx context.Context, l Limit, members ...string) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if err := checkMembers("limit", members); err != nil {
		return err
	}
	args := append([]string{strconv.Itoa(l.Rate), strconv.FormatInt(l.Per.Milliseconds(), 10), strconv.Itoa(l.Burst)}, members...)
	_, err := p.r.run(ctx, p.s.Limit, p.keys, args).AsInt64()
	return classify("limit", p.name, err)
}
