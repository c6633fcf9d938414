package assign

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/afloat/afloat/assign/assigntest"
)

// goRedis is a go-redis client of srv as a user would make it, retries
// off, closed when the test ends.
func goRedis(t testing.TB, srv *assigntest.Server) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// usersClients are the two clients a user may bring, each on its own
// connections to srv: go-redis with retries off, and rueidis as
// rueidis.NewClient makes it by default (client-side caching and all: a
// pool must work on the client the user has).
func usersClients(t *testing.T, srv *assigntest.Server) map[string]*Client {
	t.Helper()
	gr, err := FromGoRedis(goRedis(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	return map[string]*Client{"goredis": gr, "rueidis": wrap(t, rc)}
}

// TestFromGoRedisRefusesRetries: a go-redis client that would resend a
// command after a lost connection — the default, MaxRetries 3, or a
// cluster client's MaxRedirects 3 — is refused, naming the option to set;
// one with them off is taken; a type whose retries cannot be read is
// refused too.
func TestFromGoRedisRefusesRetries(t *testing.T) {
	addr := "127.0.0.1:1" // nothing is sent: the options are read
	client := func(o *redis.Options) redis.UniversalClient {
		o.Addr = addr
		c := redis.NewClient(o)
		t.Cleanup(func() { c.Close() })
		return c
	}
	cluster := func(o *redis.ClusterOptions) redis.UniversalClient {
		o.Addrs = []string{addr}
		c := redis.NewClusterClient(o)
		t.Cleanup(func() { c.Close() })
		return c
	}
	ring := func(o *redis.RingOptions) redis.UniversalClient {
		o.Addrs = map[string]string{"a": addr}
		c := redis.NewRing(o)
		t.Cleanup(func() { c.Close() })
		return c
	}
	failover := func(o *redis.FailoverOptions) redis.UniversalClient {
		o.MasterName, o.SentinelAddrs = "m", []string{addr}
		c := redis.NewFailoverClient(o)
		t.Cleanup(func() { c.Close() })
		return c
	}
	var nilClient *redis.Client
	for i, tc := range []struct {
		name string
		rdb  redis.UniversalClient
		want string // "" to be taken
	}{
		{"client, default", client(&redis.Options{}), "go-redis client with MaxRetries 3: a pick is not idempotent: set MaxRetries: -1"},
		{"client, 2 retries", client(&redis.Options{MaxRetries: 2}), "MaxRetries 2"},
		{"client, retries off", client(&redis.Options{MaxRetries: -1}), ""},
		{"failover client, retries off", failover(&redis.FailoverOptions{MaxRetries: -1}), ""},
		{"cluster, default", cluster(&redis.ClusterOptions{}), "cluster client with MaxRedirects 3 (it resends after a network error too)"},
		{"cluster, retries off", cluster(&redis.ClusterOptions{MaxRetries: -1}), "MaxRedirects 3"},
		{"cluster, node retries on", cluster(&redis.ClusterOptions{MaxRetries: 1, MaxRedirects: -1}), "cluster client with MaxRetries 1"},
		{"cluster, both off", cluster(&redis.ClusterOptions{MaxRetries: -1, MaxRedirects: -1}), ""},
		{"ring, default", ring(&redis.RingOptions{}), "go-redis ring with MaxRetries 3"},
		{"ring, retries off", ring(&redis.RingOptions{MaxRetries: -1}), ""},
		{"a type of the caller's", struct{ redis.UniversalClient }{client(&redis.Options{MaxRetries: -1})}, "want a *redis.Client, *redis.ClusterClient or *redis.Ring"},
		{"nil", nil, "nil Redis client"},
		{"typed nil", nilClient, "nil Redis client"},
	} {
		c, err := FromGoRedis(tc.rdb)
		switch {
		case tc.want == "" && (err != nil || c == nil):
			t.Errorf("step %d (%s): %v, want the client taken", i, tc.name, err)
		case tc.want != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("step %d (%s): %v, want ErrInvalid saying %q", i, tc.name, err, tc.want)
		}
	}
	if _, err := FromRueidis(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("FromRueidis(nil): %v, want ErrInvalid", err)
	}
}

// TestUsersClients runs a pool and least-in-flight leases on the caller's
// own go-redis client and on their own rueidis client, against a real
// redis-server: level picks, a request id counted once, batches of one
// script and of several (the pipelined path), the EVAL fallback on both
// paths after SCRIPT FLUSH, the errors a pick can answer, the pool's plain
// commands (settings, streaks, its creator), and leases. Each client is
// still the caller's after: it works, and the test closes it.
func TestUsersClients(t *testing.T) {
	srv := assigntest.Start(t)
	for name, c := range usersClients(t, srv) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxFor(t)
			p, err := New(c, "users-"+name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Pick(ctx); !errors.Is(err, ErrUnknownPool) {
				t.Fatalf("pick on no pool: %v, want ErrUnknownPool", err)
			}
			if ok, err := p.Create(ctx, "tester", 0, "c", "a", "b"); !ok || err != nil {
				t.Fatalf("create: %v %v", ok, err)
			}
			var got []string
			for range 4 {
				m, err := p.Pick(ctx)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, m)
			}
			if fmt.Sprint(got) != "[a b c a]" {
				t.Errorf("picks %v, want [a b c a]", got)
			}
			first, err := p.PickID(ctx, "order-1")
			if err != nil || first != "b" {
				t.Fatalf("pick with an id: %q %v, want b", first, err)
			}
			if again, err := p.PickID(ctx, "order-1"); again != first || err != nil {
				t.Fatalf("the same id again: %q %v, want %q", again, err, first)
			}
			if _, sum := spread(t, p); sum != 5 {
				t.Fatalf("sum %d after 4 picks and one id twice, want 5", sum)
			}
			batch := func(stage string, n int) {
				t.Helper()
				res, err := p.PickBatch(ctx, n)
				if err != nil || len(res) != n {
					t.Fatalf("%s: batch of %d: %d results, %v", stage, n, len(res), err)
				}
				for i, r := range res {
					if r.Err != nil || r.Member == "" {
						t.Fatalf("%s: batch pick %d: %+v", stage, i, r)
					}
				}
				ids := []string{stage + "-1", stage + "-2", stage + "-1"}
				res, err = p.PickBatchIDs(ctx, ids)
				if err != nil || len(res) != 3 || res[0].Err != nil || res[2].Member != res[0].Member {
					t.Fatalf("%s: batch with ids %v: %+v %v, want the first id's member twice", stage, ids, res, err)
				}
			}
			batch("before", 2*pickChunk+3) // three scripts in one pipeline
			if d, sum := spread(t, p); d > 1 || sum != 5+2*pickChunk+3+2 {
				t.Fatalf("after the batches: max−min %d, sum %d", d, sum)
			}
			srv.MustDo("SCRIPT", "FLUSH")
			if _, err := p.Pick(ctx); err != nil {
				t.Fatalf("pick after SCRIPT FLUSH: %v", err)
			}
			srv.MustDo("SCRIPT", "FLUSH")
			batch("after-flush", 300)
			if p.ScriptReloads() < 2 {
				t.Errorf("%d script reloads after two SCRIPT FLUSHes, want 2 or more", p.ScriptReloads())
			}
			if d, sum := spread(t, p); d > 1 || sum != 5+2*pickChunk+3+2+1+300+2 {
				t.Fatalf("after the flushes: max−min %d, sum %d", d, sum)
			}

			if err := p.SetSettings(ctx, Settings{EvictAfter: 2, LastResort: LastResortEarliest}); err != nil {
				t.Fatal(err)
			}
			if s, err := p.Settings(ctx); err != nil || s.EvictAfter != 2 || s.LastResort != LastResortEarliest {
				t.Fatalf("settings read back: %+v %v", s, err)
			}
			if _, err := p.RecordFailure(ctx, "a", 0); err != nil {
				t.Fatal(err)
			}
			if err := p.RecordSuccess(ctx, "a"); err != nil {
				t.Fatal(err)
			}
			if owner, err := p.owner(ctx); owner != "tester" || err != nil {
				t.Fatalf("owner: %q %v", owner, err)
			}
			if err := p.Remove(ctx, "a", "b", "c"); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Pick(ctx); !errors.Is(err, ErrPoolEmpty) || errors.Is(err, ErrAmbiguous) {
				t.Fatalf("pick with every member removed: %v, want ErrPoolEmpty", err)
			}
			if res, _ := p.PickBatch(ctx, 2); !errors.Is(res[1].Err, ErrPoolEmpty) {
				t.Fatalf("batch with every member removed: %+v, want ErrPoolEmpty", res)
			}

			l, err := NewLeases(c, "users-"+name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Add(ctx, "w1", "w2"); err != nil {
				t.Fatal(err)
			}
			a, err1 := l.PickLeastInFlight(ctx, time.Minute)
			b, err2 := l.PickLeastInFlight(ctx, time.Minute)
			if err := errors.Join(err1, err2); err != nil || a.Member != "w1" || b.Member != "w2" {
				t.Fatalf("two leases: %+v %+v %v", a, b, err)
			}
			if ok, err := l.Release(ctx, a); !ok || err != nil {
				t.Fatalf("release: %v %v", ok, err)
			}
			if err := p.Delete(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestGoRedisRetriesCountTwice shows why FromGoRedis refuses a client with
// retries on: given one anyway (past the check), go-redis resends a pick
// whose connection was killed after it ran, and the server counts an
// assignment that no caller saw — more than the successes and the
// ambiguous errors together, which no client with retries off can do
// (TestKilledConnections). Rounds of load and CLIENT KILL run until such
// a pick shows, up to fifty. A kill makes a phantom only when it lands
// between a pick's execution and its reply's write (about half of them on
// a quiet machine, fewer when the cores are busy), so each round kills
// three times; and the rounds end with the test's context, which says so,
// rather than leaving a load that cannot start to time out.
func TestGoRedisRetriesCountTwice(t *testing.T) {
	srv := assigntest.Start(t)
	ctx := assigntest.Context(t, 2*time.Minute)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr}) // MaxRetries 3, the default
	defer rdb.Close()
	p, err := New(&Client{conn: goRedisConn{rdb}}, "phantoms")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Add(ctx, 0, members(20)...); err != nil {
		t.Fatal(err)
	}
	var o outcomes
	rounds := 0
	for ; rounds < 50 && ctx.Err() == nil; rounds++ {
		stop := make(chan struct{})
		wg := load(ctx, p, 20, 0, stop, 200, &o)
		for range 3 {
			before := o.ok.Load()
			waitFor(t, func() bool { return o.ok.Load() >= before+300 || ctx.Err() != nil })
			srv.MustDo("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
		}
		close(stop)
		wg.Wait()
		if ctx.Err() != nil {
			break
		}
		if _, sum := spread(t, p); sum > o.ok.Load()+o.ambiguous.Load() {
			t.Logf("round %d: server total %d > %d successes + %d ambiguous: %d picks counted that nobody saw",
				rounds, sum, o.ok.Load(), o.ambiguous.Load(), sum-o.ok.Load()-o.ambiguous.Load())
			return
		}
	}
	t.Fatalf("no pick counted twice in %d rounds of three CLIENT KILLs with go-redis's retries on (context: %v): %d successes, %d ambiguous, %d other",
		rounds, ctx.Err(), o.ok.Load(), o.ambiguous.Load(), o.unsent.Load())
}
