package assign

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/afloat/afloat/assign/assigntest"
	"github.com/afloat/afloat/internal/redisurl"
)

// BenchmarkClients measures the pick through the two Go clients the issue
// names, on the same redis-server in the same run, with 50 goroutines
// (RunParallel with parallelism 50/GOMAXPROCS) on a 100-member pool, each
// client given to this package (FromRueidis, FromGoRedis with MaxRetries
// -1, retries off):
//
//   - single: Pick, one script a call (rueidis pipelines the goroutines'
//     calls on a shared connection by itself; go-redis gives each its own
//     connection and round trip);
//   - pipeline16: a pipeline of 16 single-pick EVALSHAs (runMany, as
//     PickBatch was until it made its picks in one script);
//   - pickbatch16: PickBatch(16), one pick_many script a call: the server
//     does less for it than for 16 single picks.
//
// ns/op is per pick. docs/assign.md explains the choice it led to.
func BenchmarkClients(b *testing.B) {
	srv := assigntest.Start(b)
	ctx := context.Background()
	rc, err := redisurl.Dial(srv.URL, ErrInvalid)
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	gr := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, PoolSize: 64, MinIdleConns: 50})
	defer gr.Close()
	pools := map[string]*Pool{}
	for name, c := range map[string]func() (*Client, error){
		"rueidis": func() (*Client, error) { return FromRueidis(rc) },
		"goredis": func() (*Client, error) { return FromGoRedis(gr) },
	} {
		cc, err := c()
		if err != nil {
			b.Fatal(err)
		}
		if pools[name], err = New(cc, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	members := make([]string, 100)
	for i := range members {
		members[i] = "proxy-" + strconv.Itoa(i)
	}
	if _, err := pools["rueidis"].Add(ctx, 0, members...); err != nil {
		b.Fatal(err)
	}
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
	for _, name := range []string{"rueidis", "goredis"} {
		p := pools[name]
		b.Run(name+"/single", func(b *testing.B) {
			parallel(b, 1, func() error { _, err := p.Pick(ctx); return err })
		})
		b.Run(name+"/pipeline16", func(b *testing.B) {
			parallel(b, 16, func() error {
				calls := make([]*call, 16)
				for i := range calls {
					calls[i] = p.pick
				}
				for _, r := range p.r.runMany(ctx, calls) {
					if err := r.Error(); err != nil {
						return err
					}
				}
				return nil
			})
		})
		b.Run(name+"/pickbatch16", func(b *testing.B) {
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
	}
}
