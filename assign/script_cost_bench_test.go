package assign

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/assign/assigntest"
	"github.com/afloat/afloat/internal/redisurl"
)

// seedPick is the seed's script as the spec gives it (ZRANGE key 0 0,
// ZINCRBY key 1 member): the floor the pool's pick is held to.
const seedPick = `local m = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
if not m then return false end
redis.call('ZINCRBY', KEYS[1], 1, m)
return m`

// BenchmarkScriptCost measures what a pick costs the server — EVALSHA's
// usec_per_call from INFO commandstats, so the client, the network and
// the machine's other load count for nothing — for three pools of 100
// members on the same redis-server in the same run, b.N picks each:
//
//   - seed: the seed's script (seedPick), the floor;
//   - plain: Pick on a pool with no cooling and no weighted member, the
//     path every pool took before cooldowns and weights;
//   - busy: Pick on a pool with 30 members weighted 2 to 4, 10 cooling
//     (for an hour: none comes back during the run) and 10 rate-limited
//     (a million a second: none runs out).
//
// It reports each one's server µs per pick, and plain/seed and busy/plain.
func BenchmarkScriptCost(b *testing.B) {
	srv := assigntest.Start(b)
	ctx := context.Background()
	rc, err := redisurl.Dial(srv.URL, ErrInvalid)
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	c := wrap(b, rc)
	members := make([]string, 100)
	for i := range members {
		members[i] = "proxy-" + strconv.Itoa(i)
	}
	pool := func(name string) *Pool {
		p, err := New(c, name)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Add(ctx, 0, members...); err != nil {
			b.Fatal(err)
		}
		return p
	}
	seed, plain, busy := pool("seed"), pool("plain"), pool("busy")
	for i, w := range []int{2, 3, 4} {
		if err := busy.SetWeight(ctx, w, members[i*10:i*10+10]...); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := busy.CooldownFor(ctx, time.Hour, members[50:60]...); err != nil {
		b.Fatal(err)
	}
	if err := busy.SetLimit(ctx, Limit{Rate: maxRate, Per: time.Second, Burst: maxBurst}, members[60:70]...); err != nil {
		b.Fatal(err)
	}
	sha, err := rc.Do(ctx, rc.B().ScriptLoad().Script(seedPick).Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	seedCmd := rc.B().Evalsha().Sha1(sha).Numkeys(1).Key(seed.k.Active).Build().Pin()

	// The picks go in rounds of up to 2,000 of each kind in turn, and each
	// kind's cost is its cheapest round: the machine's other load only
	// ever adds to a round's time, so the minimum is the script's own.
	cost := func(n int, pick func() error) float64 {
		if err := rc.Do(ctx, rc.B().ConfigResetstat().Build()).Error(); err != nil {
			b.Fatal(err)
		}
		for range n {
			if err := pick(); err != nil {
				b.Fatal(err)
			}
		}
		info, err := rc.Do(ctx, rc.B().Info().Section("commandstats").Build()).ToString()
		if err != nil {
			b.Fatal(err)
		}
		return evalshaUsecPerCall(b, info)
	}
	s, p, y := math.Inf(1), math.Inf(1), math.Inf(1)
	b.ResetTimer()
	for done := 0; done < b.N; done += 2000 {
		n := min(2000, b.N-done)
		s = min(s, cost(n, func() error { return rc.Do(ctx, seedCmd).Error() }))
		p = min(p, cost(n, func() error { _, err := plain.Pick(ctx); return err }))
		y = min(y, cost(n, func() error { _, err := busy.Pick(ctx); return err }))
	}
	b.StopTimer()
	b.ReportMetric(s, "seed-µs/pick")
	b.ReportMetric(p, "plain-µs/pick")
	b.ReportMetric(y, "busy-µs/pick")
	b.ReportMetric(p/s, "plain/seed")
	b.ReportMetric(y/p, "busy/plain")
	b.ReportMetric(0, "ns/op") // wall time here is the client's; the server's is above
}

// evalshaUsecPerCall reads usec_per_call of cmdstat_evalsha.
func evalshaUsecPerCall(b *testing.B, info string) float64 {
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(f, "usec_per_call="); ok {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				return x
			}
		}
	}
	b.Fatalf("no cmdstat_evalsha in %q", info)
	return 0
}
