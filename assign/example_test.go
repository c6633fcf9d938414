package assign_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/afloat/afloat/assign"
)

// dialDemo gives the pools a go-redis client of an in-process
// Redis-compatible server (miniredis), so that the examples run anywhere;
// a service passes its own client in the same way (ExampleFromGoRedis).
func dialDemo() (*assign.Client, func()) {
	srv, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	c, err := assign.FromGoRedis(rdb)
	if err != nil {
		panic(err)
	}
	return c, func() { rdb.Close(); srv.Close() }
}

// A pool on a Redis server: add members at an agreed count, pick the least
// used, and handle an empty pool by making no request.
func Example() {
	c, stop := dialDemo()
	defer stop()
	ctx := context.Background()
	p, _ := assign.New(c, "proxies")
	p.Add(ctx, 0, "http://10.0.0.1:3128", "http://10.0.0.2:3128")
	for _, id := range []string{"order-1234", "order-1235", "order-1234"} {
		m, err := p.PickID(ctx, id) // a retry with the same id returns the same member
		switch {
		case errors.Is(err, assign.ErrPoolEmpty):
			return // no eligible proxy: make no request
		case errors.Is(err, assign.ErrAmbiguous):
			m, err = p.PickID(ctx, id) // safe: counted once
		}
		fmt.Println(id, m, err)
	}
	st, _ := p.Status(ctx)
	for _, m := range st.Members {
		fmt.Println(m.Name, m.Count)
	}
	// Output:
	// order-1234 http://10.0.0.1:3128 <nil>
	// order-1235 http://10.0.0.2:3128 <nil>
	// order-1234 http://10.0.0.1:3128 <nil>
	// http://10.0.0.1:3128 1
	// http://10.0.0.2:3128 1
}

// A service gives package assign the go-redis client it has — a
// *redis.Client, a *redis.ClusterClient or a *redis.Ring — with go-redis's
// retries off: a pick is not idempotent, and go-redis resends a command
// after a lost connection by default, which would count assignments
// nobody received. A client with retries on is refused.
func ExampleFromGoRedis() {
	srv, err := miniredis.Run() // the service's Redis
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	def := redis.NewClient(&redis.Options{Addr: srv.Addr()}) // MaxRetries 3 by default
	defer def.Close()
	_, err = assign.FromGoRedis(def)
	fmt.Println(errors.Is(err, assign.ErrInvalid))

	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	defer rdb.Close() // the service's client: it closes it, not package assign
	c, err := assign.FromGoRedis(rdb)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	p, _ := assign.New(c, "proxies")
	p.Add(ctx, 0, "http://10.0.0.1:3128", "http://10.0.0.2:3128")
	res, _ := p.PickBatch(ctx, 3) // one round trip
	for _, r := range res {
		fmt.Println(r.Member, r.Err)
	}
	fmt.Println(rdb.Ping(ctx).Val()) // still the service's, and open
	// Output:
	// true
	// http://10.0.0.1:3128 <nil>
	// http://10.0.0.2:3128 <nil>
	// http://10.0.0.1:3128 <nil>
	// PONG
}

// A service on rueidis gives its client as it is: rueidis never resends a
// write such as the pick's script, and it pipelines the calls of many
// goroutines on one connection by itself.
func ExampleFromRueidis() {
	srv, err := miniredis.Run() // the service's Redis
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	// Client-side caching off only because the in-process server here
	// lacks it; package assign does not use it.
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		panic(err)
	}
	defer rc.Close()
	c, _ := assign.FromRueidis(rc)
	ctx := context.Background()
	p, _ := assign.New(c, "api-keys")
	p.Add(ctx, 0, "key-1", "key-2")
	m1, _ := p.PickID(ctx, "req-1")
	m2, _ := p.PickID(ctx, "req-1") // the same request, retried: the same key, counted once
	m3, _ := p.Pick(ctx)
	fmt.Println(m1, m2, m3)
	// Output:
	// key-1 key-1 key-2
}

// Newcomers start level with the least used (AtMinimum), not at zero,
// where they would take every pick until they caught up.
func ExamplePool_Add() {
	c, stop := dialDemo()
	defer stop()
	ctx := context.Background()
	p, _ := assign.New(c, "proxies")
	p.Add(ctx, 40, "a", "b")
	r, _ := p.Add(ctx, assign.AtMinimum, "c", "a") // a is there already: untouched
	fmt.Printf("%+v\n", r)
	var picks []string
	for range 6 {
		m, _ := p.Pick(ctx)
		picks = append(picks, m)
	}
	fmt.Println(strings.Join(picks, " "))
	// Output:
	// {Added:1 Active:1 Removed:0}
	// a b c a b c
}

// A policy reads its name as a flag or a JSON field does; an unknown
// name is refused, and the policy keeps its value.
func ExampleRestorePolicy_UnmarshalText() {
	for _, s := range []string{"current-minimum", "keep-history", "zero", "newest"} {
		var p assign.RestorePolicy
		err := p.UnmarshalText([]byte(s))
		fmt.Println(p, err)
	}
	// Output:
	// current-minimum <nil>
	// keep-history <nil>
	// zero <nil>
	// current-minimum assign: invalid argument: restore policy "newest": want current-minimum, keep-history, zero
}

// Least in flight: lease a member for the work, release it after; the
// next lease goes to the member with the fewest open.
func ExampleLeases_PickLeastInFlight() {
	c, stop := dialDemo()
	defer stop()
	ctx := context.Background()
	l, _ := assign.NewLeases(c, "workers")
	l.Add(ctx, "w1", "w2")
	a, err := l.PickLeastInFlight(ctx, 30*time.Second) // reclaimed by the server if not released by then
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := l.PickLeastInFlight(ctx, 30*time.Second)
	fmt.Println("working on", a.Member, "and", b.Member)
	l.Release(ctx, a)
	again, _ := l.Release(ctx, a) // releasing twice is harmless
	fmt.Println("released twice:", again)
	next, _ := l.PickLeastInFlight(ctx, 30*time.Second)
	fmt.Println("next on", next.Member)
	ms, open, _ := l.List(ctx) // each member's leases open (Count)
	fmt.Println(open, "open:", ms[0].Name, ms[0].Count, ms[1].Name, ms[1].Count)
	// Output:
	// working on w1 and w2
	// released twice: false
	// next on w1
	// 2 open: w1 1 w2 1
}

// An API key that answered 429 with Retry-After cools down: no worker
// picks it until then. When every key is cooling, a pick fails with the
// time the first comes back, which a server can pass on as Retry-After.
func ExamplePool_RecordFailure() {
	c, stop := dialDemo()
	defer stop()
	ctx := context.Background()
	p, _ := assign.New(c, "api-keys")
	p.AddWeighted(ctx, 1, 0, "key-small")
	p.AddWeighted(ctx, 3, 0, "key-big") // three times the share

	picks := func(n int) {
		var ms []string
		for range n {
			m, _ := p.Pick(ctx)
			ms = append(ms, m)
		}
		fmt.Println(strings.Join(ms, " "))
	}
	picks(4)

	o, _ := p.RecordFailure(ctx, "key-big", 30*time.Second) // a 429
	fmt.Println("key-big streak", o.Streak, "cooling", !o.CoolingUntil.IsZero())
	picks(2)

	p.CooldownFor(ctx, time.Minute, "key-small")
	_, err := p.Pick(ctx)
	var ce *assign.CoolingError
	if errors.As(err, &ce) {
		wait := time.Until(ce.Until) // answer Retry-After with it
		fmt.Println("all cooling; key-big back within 30s:", wait > 0 && wait <= 30*time.Second)
	}
	// Output:
	// key-big key-small key-big key-big
	// key-big streak 1 cooling true
	// key-small key-small
	// all cooling; key-big back within 30s: true
}

// A failure recorded with a request id can be sent again after a lost
// connection (ErrAmbiguous): the second attempt answers what the first
// did, and the failure and the streak are counted once.
func ExamplePool_RecordFailureID() {
	c, stop := dialDemo()
	defer stop()
	ctx := context.Background()
	p, _ := assign.New(c, "api-keys-ids")
	p.Add(ctx, 0, "key-1")

	for range 2 { // the same request, sent twice
		o, err := p.RecordFailureID(ctx, "req-42", "key-1", 10*time.Second)
		fmt.Println("streak", o.Streak, "cooling", !o.CoolingUntil.IsZero(), err)
	}
	st, _ := p.Status(ctx)
	fmt.Println("failures", st.Members[0].Failures)
	// Output:
	// streak 1 cooling true <nil>
	// streak 1 cooling true <nil>
	// failures 1
}

// A pool of API keys that each take two requests at a time: PickLease
// leases the least-used key with room, and a full key is skipped until a
// lease ends.
func ExamplePool_PickLease() {
	c, stop := dialDemo()
	defer stop()
	ctx := context.Background()
	p, _ := assign.New(c, "llm-keys")
	p.Add(ctx, 0, "key-1", "key-2")
	p.SetConcurrency(ctx, 2, "key-1", "key-2")
	var held []assign.Lease
	for range 4 {
		l, err := p.PickLease(ctx, 30*time.Second) // ends by itself then if not released
		if err != nil {
			fmt.Println(err)
			return
		}
		held = append(held, l)
	}
	fmt.Println(held[0].Member, held[1].Member, held[2].Member, held[3].Member)
	_, err := p.PickLease(ctx, 30*time.Second)
	fmt.Println("a fifth:", errors.Is(err, assign.ErrAllCooling))
	p.Release(ctx, held[1]) // key-2 has room again
	l, _ := p.PickLease(ctx, 30*time.Second)
	fmt.Println("after a release:", l.Member)
	p.SetConcurrency(ctx, 0, "key-1", "key-2") // no cap any more
	l, err = p.PickLease(ctx, 30*time.Second)
	fmt.Println("uncapped:", l.Member, err)
	st, _ := p.Status(ctx)
	for _, m := range st.Members {
		fmt.Println(m.Name, "count", m.Count, "in flight", m.InFlight)
	}
	// Output:
	// key-1 key-2 key-1 key-2
	// a fifth: true
	// after a release: key-2
	// uncapped: key-1 <nil>
	// key-1 count 3 in flight 3
	// key-2 count 3 in flight 2
}

// Delete removes everything the pool made — members, settings, and the
// records of request ids and sticky keys too — and nothing else.
func ExamplePool_Delete() {
	srv, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	defer rdb.Close()
	c, _ := assign.FromGoRedis(rdb)
	ctx := context.Background()
	rdb.Set(ctx, "someone-else's", "x", 0)
	p, _ := assign.New(c, "proxies")
	p.Add(ctx, 0, "http://10.0.0.1:3128", "http://10.0.0.2:3128")
	p.PickID(ctx, "order-1234")    // recorded under its id for 10 minutes
	p.PickSticky(ctx, "session-7") // and this one for 30
	p.SetSettings(ctx, assign.Settings{EvictAfter: 3})
	for _, k := range srv.Keys() {
		fmt.Println(k)
	}

	err = p.Delete(ctx)
	fmt.Println("after Delete:", srv.Keys(), err)
	_, err = p.Pick(ctx)
	fmt.Println(errors.Is(err, assign.ErrUnknownPool))
	// Output:
	// afloat:assign:{proxies}:counts
	// afloat:assign:{proxies}:req:order-1234
	// afloat:assign:{proxies}:settings
	// afloat:assign:{proxies}:sticky:session-7
	// someone-else's
	// after Delete: [someone-else's] <nil>
	// true
}
