package assign

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Bad input gets ErrInvalid with a message that names the field and the
// allowed range, and nothing is sent.
func TestBadInput(t *testing.T) {
	_, rc := newClient(t)
	c := wrap(t, rc)
	ctx := ctxFor(t)
	p := newPool(t, rc, "valid")
	l, _ := NewLeases(c, "valid")
	for i, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"pool name empty", func() error { _, err := New(c, ""); return err }(), "pool name \"\": want 1 to 100 characters"},
		{"pool name with a brace", func() error { _, err := New(c, "a{b}"); return err }(), "want letters, digits and - _ . : only"},
		{"nil client", func() error { _, err := New(nil, "x"); return err }(), "nil Redis client"},
		{"zero client", func() error { _, err := New(&Client{}, "x"); return err }(), "nil Redis client"},
		{"request TTL", func() error { _, err := New(c, "x", WithRequestTTL(time.Millisecond)); return err }(), "request TTL 1ms: want 1s to 168h0m0s"},
		{"negative count", func() error { _, err := p.Add(ctx, -1, "a"); return err }(), "initial count -1: want an integer from 0 to 9007199254740992"},
		{"no members", func() error { _, err := p.Add(ctx, 0); return err }(), "add: 0 members: want 1 to 10000"},
		{"member twice", func() error { _, err := p.Add(ctx, 0, "a", "a"); return err }(), `member "a" given twice`},
		{"empty member", p.Remove(ctx, ""), `member name "": want 1 to 512 bytes of UTF-8`},
		{"control character", p.Restore(ctx, RestoreZero, "a\nb"), "control characters are not allowed"},
		{"policy", p.Restore(ctx, RestorePolicy(7), "a"), "restore policy 7: want current-minimum, keep-history, zero"},
		{"batch 0", func() error { _, err := p.PickBatch(ctx, 0); return err }(), "batch of 0 picks: want 1 to 10000"},
		{"request id", func() error { _, err := p.PickID(ctx, strings.Repeat("x", 201)); return err }(), "request id"},
		{"failure's request id", func() error { _, err := p.RecordFailureID(ctx, "", "a", 0); return err }(), `request id "": want 1 to 200 bytes`},
		{"lease TTL", func() error { _, err := l.PickLeastInFlight(ctx, 0); return err }(), "lease TTL 0s: want 1ms to 24h0m0s"},
		{"lease id", func() error { _, err := l.Release(ctx, Lease{ID: "x"}); return err }(), `lease id "x"`},
		{"policy name", func() error { _, err := parseRestorePolicy("newest"); return err }(), `restore policy "newest": want current-minimum, keep-history, zero`},
		{"weight 0", func() error { _, err := p.AddWeighted(ctx, 0, 0, "a"); return err }(), "weight 0: want 1 to 1000"},
		{"weight over", p.SetWeight(ctx, 1001, "a"), "weight 1001: want 1 to 1000"},
		{"cooldown 0", func() error { _, err := p.CooldownFor(ctx, 0, "a"); return err }(), "cooldown 0s: want 1ms to 720h0m0s"},
		{"cooldown too long", func() error { _, err := p.CooldownFor(ctx, maxCooldown+1, "a"); return err }(), "want 1ms to 720h0m0s"},
		{"cooldown until zero", p.cooldownUntil(ctx, "a", time.Time{}), "cooldown until"},
		{"retry after", func() error { _, err := p.RecordFailure(ctx, "a", -time.Second); return err }(), "retry after -1s: want 1ms to 720h0m0s"},
		{"success member", p.RecordSuccess(ctx, ""), `member name ""`},
		{"evict after", p.SetSettings(ctx, Settings{EvictAfter: -1}), "evict after -1 failures: want 0 (never) to 1000"},
		{"last resort", p.SetSettings(ctx, Settings{LastResort: 9}), "last resort 9: want fail, earliest"},
		{"last resort name", func() error { _, err := parseLastResort("any"); return err }(), `last resort "any": want fail, earliest`},
		{"sticky key", func() error { _, err := p.PickSticky(ctx, ""); return err }(), `sticky key "": want 1 to 200 bytes of UTF-8`},
		{"sticky TTL", func() error { _, err := New(c, "x", WithStickyTTL(time.Hour*24*8)); return err }(), "sticky TTL 192h0m0s: want 1s to 168h0m0s"},
		{"rate 0", p.SetLimit(ctx, Limit{Rate: 0, Per: time.Second, Burst: 1}, "a"), "rate 0: want 1 to 1000000 requests"},
		{"rate per", p.SetLimit(ctx, Limit{Rate: 1, Per: time.Microsecond, Burst: 1}, "a"), "rate per 1µs: want whole milliseconds from 1ms to 24h0m0s"},
		{"burst", p.SetLimit(ctx, Limit{Rate: 1, Per: time.Second}, "a"), "burst 0: want 1 to 1000000"},
	} {
		if !errors.Is(tc.err, ErrInvalid) || !strings.Contains(tc.err.Error(), tc.want) || !strings.HasPrefix(tc.err.Error(), "assign: ") {
			t.Errorf("step %d (%s): error %v, want ErrInvalid saying %q", i, tc.name, tc.err, tc.want)
		}
	}
	// An unknown pool is not bad input but a definite answer.
	q := newPool(t, rc, "never-made")
	for i, err := range []error{
		func() error { _, err := q.Pick(ctx); return err }(),
		q.Remove(ctx, "a"),
		q.Restore(ctx, RestoreZero, "a"),
		func() error { _, err := q.list(ctx); return err }(),
		func() error { _, err := q.CooldownFor(ctx, time.Second, "a"); return err }(),
		q.SetWeight(ctx, 2, "a"),
	} {
		if !errors.Is(err, ErrUnknownPool) || !strings.Contains(err.Error(), `"never-made"`) {
			t.Errorf("step %d: %v, want ErrUnknownPool naming the pool", i, err)
		}
	}
}
