package assign

import (
	"context"
	"strconv"
	"testing"

	"github.com/afloat/afloat/assign/assigntest"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/afloat/afloat/assign/internal/lua"
)

// BenchmarkClients measures the pick through the two Go clients the issue
// names, on the same redis-server in the same run, with 50 goroutines
// (RunParallel with parallelism 50/GOMAXPROCS) on a 100-member pool:
//
//   - rueidis: this package's Pick (auto-pipelined), and a pipeline of 16
//     single-pick EVALSHAs (runManyBuilt, as PickBatch was until it made
//     its picks in one script);
//   - go-redis: Script.Run (EVALSHA with the EVAL fallback), and a
//     pipeline of 16 EVALSHAs, with MaxRetries -1 (retries off);
//   - and PickBatch(16), one pick_many script a call, which no go-redis
//     row matches: the server does less for it.
//
// ns/op is per pick. docs/assign.md explains the choice it led to.
func BenchmarkClients(b *testing.B) {
	srv := assigntest.Start(b)
	ctx := context.Background()
	c, err := Dial(srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	p, err := New(c, "bench")
	if err != nil {
		b.Fatal(err)
	}
	members := make([]string, 100)
	for i := range members {
		members[i] = "proxy-" + strconv.Itoa(i)
	}
	if _, err := p.Add(ctx, 0, members...); err != nil {
		b.Fatal(err)
	}
	gr := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, PoolSize: 64, MinIdleConns: 50})
	defer gr.Close()
	grScript := redis.NewScript(lua.Pick.Src)
	keys := p.keys
	parallel := func(b *testing.B, batch int, pick func() error) {
		b.SetParallelism(max(1, 50/testingProcs()))
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := pick(); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "picks/s")
	}

	b.Run("rueidis/single", func(b *testing.B) {
		parallel(b, 1, func() error { _, err := p.Pick(ctx); return err })
	})
	b.Run("goredis/single", func(b *testing.B) {
		parallel(b, 1, func() error { return grScript.Run(ctx, gr, keys).Err() })
	})
	b.Run("rueidis/pipeline16", func(b *testing.B) {
		parallel(b, 16, func() error {
			cmds := make(rueidis.Commands, 16)
			for i := range cmds {
				cmds[i] = p.pick
			}
			for _, r := range p.r.runManyBuilt(ctx, cmds, lua.Pick, func(int) ([]string, []string) { return keys, nil }) {
				if err := r.Error(); err != nil {
					return err
				}
			}
			return nil
		})
	})
	b.Run("rueidis/pickbatch16", func(b *testing.B) {
		parallel(b, 16, func() error {
			res, err := p.PickBatch(ctx, 16)
			if err != nil {
				return err
			}
			for _, r := range res {
				if r.Err != nil {
					return r.Err
				}
			}
			return nil
		})
	})
	b.Run("goredis/pipeline16", func(b *testing.B) {
		parallel(b, 16, func() error {
			cmds, err := gr.Pipelined(ctx, func(pp redis.Pipeliner) error {
				for range 16 {
					grScript.EvalSha(ctx, pp, keys)
				}
				return nil
			})
			if err != nil {
				return err
			}
			for _, c := range cmds {
				if c.Err() != nil {
					return c.Err()
				}
			}
			return nil
		})
	})
}
