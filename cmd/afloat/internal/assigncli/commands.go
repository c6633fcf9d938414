package assigncli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/afloat/afloat/assign"
	"github.com/afloat/afloat/assign/assignbench"
	"github.com/afloat/afloat/assign/proxypool"
	"github.com/afloat/afloat/internal/cli"
	"github.com/afloat/afloat/internal/redisurl"
)

var errRedisRequired = errors.New("--redis is required (or set AFLOAT_REDIS_URL): want redis://host:port")

// redisFlag adds --redis, defaulting to $AFLOAT_REDIS_URL.
func redisFlag(c *cli.Command, v *string) {
	c.StringVar(v, "redis", os.Getenv("AFLOAT_REDIS_URL"), "Redis `URL`, redis://[user:password@]host:port[/db] (default $AFLOAT_REDIS_URL)")
}

// poolFlags are the flags of a command on a pool.
type poolFlags struct{ redisURL, pool string }

func (f *poolFlags) register(c *cli.Command) {
	redisFlag(c, &f.redisURL)
	c.StringVar(&f.pool, "pool", "", "pool `NAME`: 1 to 100 letters, digits, - _ . : (required)")
}

// check refuses the flags before anything connects, with the package's
// checks of a URL and a pool name.
func (f *poolFlags) check() error {
	switch {
	case f.redisURL == "":
		return errRedisRequired
	case f.pool == "":
		return errors.New("--pool is required: want a pool name")
	}
	if err := redisurl.Check(f.redisURL, assign.ErrInvalid); err != nil {
		return fmt.Errorf("--redis: %w", err)
	}
	if err := assign.CheckPoolName(f.pool); err != nil {
		return fmt.Errorf("--pool: %w", err)
	}
	return nil
}

// run opens the pool and runs op on it, within timeout unless 0. The
// package checks what op is given (assign.ErrInvalid).
func (f *poolFlags) run(c *cli.Command, timeout time.Duration, op func(context.Context, *assign.Pool) error) int {
	return f.connect(c, timeout, func(ctx context.Context, client *assign.Client) error {
		p, err := assign.New(client, f.pool)
		if err != nil {
			return err
		}
		return op(ctx, p)
	})
}

// runLeases is run for the pool's least-in-flight variant.
func (f *poolFlags) runLeases(c *cli.Command, timeout time.Duration, op func(context.Context, *assign.Leases) error) int {
	return f.connect(c, timeout, func(ctx context.Context, client *assign.Client) error {
		l, err := assign.NewLeases(client, f.pool)
		if err != nil {
			return err
		}
		return op(ctx, l)
	})
}

// connect checks the flags, dials Redis and runs op, within timeout
// unless 0.
func (f *poolFlags) connect(c *cli.Command, timeout time.Duration, op func(context.Context, *assign.Client) error) int {
	if err := f.check(); err != nil {
		return c.Refuse(err)
	}
	rc, err := redisurl.Dial(f.redisURL, assign.ErrInvalid)
	if err != nil {
		return assignFail(c, err)
	}
	defer rc.Close()
	client, err := assign.FromRueidis(rc)
	if err != nil {
		return assignFail(c, err)
	}
	ctx, stop := cli.Interruptible()
	defer stop()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return assignFail(c, op(ctx, client))
}

// assignFail returns cli.ExitOK for nil. Bad input and an unknown pool or
// member are refusals (exit 2); an empty pool, an unreachable server or an
// ambiguous outcome are failures while running (exit 1).
func assignFail(c *cli.Command, err error) int {
	return c.Fail(err, assign.ErrInvalid, assign.ErrUnknownPool, assign.ErrUnknownMember)
}

// Members is assign add, remove or restore (op): the commands that
// change the members given as arguments and say what they did in one line.
func Members(op string) func(c *cli.Command, args []string) int {
	return func(c *cli.Command, args []string) int {
		var f poolFlags
		var count int64
		var atMin bool
		var pol assign.RestorePolicy
		weight := 1
		f.register(c)
		switch op {
		case "add":
			c.Int64Var(&count, "count", 0, "the agreed initial count `N` of the new members, 0 to 2^53")
			c.BoolVar(&atMin, "at-minimum", false, "start the new members at the active members' current minimum instead of --count")
			c.IntVar(&weight, "weight", 1, "the new members' weight `W`, 1 to 1000: each takes W times the picks of a member of weight 1")
		case "restore":
			c.TextVar(&pol, "policy", pol, "`POLICY`: the count the members rejoin with, current-minimum, keep-history or zero (zero piles picks onto them)")
		}
		members, status, ok := c.ParseArgs(args)
		if !ok {
			return status
		}
		if err := c.NotWith("at-minimum", ": give one or the other", "count"); err != nil {
			return c.Refuse(err)
		}
		return f.run(c, time.Minute, func(ctx context.Context, p *assign.Pool) error {
			var r assign.AddResult
			var done string
			var err error
			switch {
			case op == "remove":
				err, done = p.Remove(ctx, members...), fmt.Sprintf("removed %d from pool %q (counts kept for restore)", len(members), f.pool)
			case op == "restore":
				err, done = p.Restore(ctx, pol, members...), fmt.Sprintf("restored %d to pool %q at %s", len(members), f.pool, pol)
			case atMin:
				r, err = p.AddWeighted(ctx, weight, assign.AtMinimum, members...)
			default:
				r, err = p.AddWeighted(ctx, weight, count, members...)
			}
			switch {
			case err != nil:
				return err
			case op == "add":
				return writeAdded(c.Stdout, f.pool, r)
			}
			_, err = fmt.Fprintln(c.Stdout, done)
			return err
		})
	}
}

// List is assign list: a pool's members and counts, as a table or JSON
// lines.
func List(c *cli.Command, args []string) int {
	var f poolFlags
	var format string
	f.register(c)
	c.StringVar(&format, "format", "table", "output format: table or jsonl")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	return f.run(c, time.Minute, func(ctx context.Context, p *assign.Pool) error {
		st, err := p.Status(ctx)
		if err != nil {
			return err
		}
		return writeMembers(c.Stdout, st.Members, format)
	})
}

// Cooldown is assign cooldown: members put aside for a while, all or
// none.
func Cooldown(c *cli.Command, args []string) int {
	var f poolFlags
	var d time.Duration
	f.register(c)
	c.DurationVar(&d, "for", 0, "how long the members cool down, `DURATION` from 1ms to 720h, on Redis's clock (required)")
	members, status, ok := c.ParseArgs(args)
	if !ok {
		return status
	}
	if !c.Given("for") {
		return c.Refuse(errors.New("--for is required: want a duration such as 30s"))
	}
	return f.run(c, time.Minute, func(ctx context.Context, p *assign.Pool) error {
		until, err := p.CooldownFor(ctx, d, members...)
		if err != nil {
			return err
		}
		return writeCooling(c.Stdout, f.pool, members, until)
	})
}

// Limit is assign limit: members' rate limits and concurrency caps set
// or cleared, all or none.
func Limit(c *cli.Command, args []string) int {
	var f poolFlags
	var l assign.Limit
	var clear bool
	f.register(c)
	c.IntVar(&l.Rate, "rate", 0, "requests `N` per --per, 1 to 1000000 (required unless --clear)")
	c.DurationVar(&l.Per, "per", time.Second, "the rate's `PERIOD`, 1ms to 24h: 1s, 1m")
	c.IntVar(&l.Burst, "burst", 0, "requests `B` at once, 1 to 1000000 (default --rate: the period's budget at once)")
	c.BoolVar(&clear, "clear", false, "take the members' rate limits away")
	var conc int
	c.IntVar(&conc, "concurrency", 0, "cap the members' leases in flight (pick --lease) at `N`, 1 to 1000000; 0 takes the cap away")
	members, status, ok := c.ParseArgs(args)
	if !ok {
		return status
	}
	if err := c.NotWith("clear", ": give one or the other", "rate", "per", "burst"); err != nil {
		return c.Refuse(err)
	}
	rate := clear || c.Given("rate")
	if !rate && !c.Given("concurrency") {
		return c.Refuse(errors.New("--rate is required (or --clear, or --concurrency): want requests per --per"))
	}
	if !rate {
		if err := c.OnlyWith("rate", "per", "burst"); err != nil {
			return c.Refuse(err)
		}
	}
	if conc < 0 || conc > assign.MaxConcurrency {
		return c.Refuse(fmt.Errorf("--concurrency %d: want 1 to %d leases in flight, or 0 for no cap", conc, assign.MaxConcurrency))
	}
	if !c.Given("burst") {
		l.Burst = l.Rate
	}
	if !clear && rate {
		if err := l.Validate(); err != nil {
			return c.Refuse(err)
		}
	}
	return f.run(c, time.Minute, func(ctx context.Context, p *assign.Pool) error {
		if c.Given("concurrency") {
			if err := capConcurrency(ctx, c, p, f.pool, conc, members); err != nil || !rate {
				return err
			}
		}
		if clear {
			if err := p.SetLimit(ctx, assign.Limit{}, members...); err != nil {
				return err
			}
			_, err := fmt.Fprintf(c.Stdout, "cleared the rate limits of %d members of pool %q\n", len(members), f.pool)
			return err
		}
		if err := p.SetLimit(ctx, l, members...); err != nil {
			return err
		}
		_, err := fmt.Fprintf(c.Stdout, "limited %d members of pool %q to %d per %v, bursts of %d\n", len(members), f.pool, l.Rate, l.Per, l.Burst)
		return err
	})
}

// capConcurrency sets members' concurrency caps (0 clears them) and says
// so.
func capConcurrency(ctx context.Context, c *cli.Command, p *assign.Pool, pool string, n int, members []string) error {
	if err := p.SetConcurrency(ctx, n, members...); err != nil {
		return err
	}
	if n == 0 {
		_, err := fmt.Fprintf(c.Stdout, "cleared the concurrency caps of %d members of pool %q\n", len(members), pool)
		return err
	}
	_, err := fmt.Fprintf(c.Stdout, "capped %d members of pool %q at %d leases in flight\n", len(members), pool, n)
	return err
}

// Status is assign status: a pool's members, settings, cooldowns and
// leases open.
func Status(c *cli.Command, args []string) int {
	var f poolFlags
	var format string
	f.register(c)
	c.StringVar(&format, "format", "table", "output format: table or json")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	if err := checkFormat(format); err != nil {
		return c.Refuse(err)
	}
	return f.run(c, time.Minute, func(ctx context.Context, p *assign.Pool) error {
		st, err := p.Status(ctx)
		if err != nil {
			return err
		}
		return writeStatus(c.Stdout, st, format)
	})
}

// Settings is assign settings: a pool's eviction streak and last resort.
// The flags given change, the others keep their values (read, then
// written: two people setting a pool's settings at once may undo each
// other's).
func Settings(c *cli.Command, args []string) int {
	var f poolFlags
	var s assign.Settings
	f.register(c)
	c.IntVar(&s.EvictAfter, "evict-after", 0, "failures in a row `N` that evict a member, 0 (never) to 1000")
	c.TextVar(&s.LastResort, "last-resort", s.LastResort, "`POLICY` when every member is cooling: fail (answer when the first comes back) or earliest (pick it)")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	if err := s.Validate(); err != nil {
		return c.Refuse(err)
	}
	return f.run(c, time.Minute, func(ctx context.Context, p *assign.Pool) error {
		was, err := p.Settings(ctx)
		if err != nil {
			return err
		}
		if !c.Given("evict-after") {
			s.EvictAfter = was.EvictAfter
		}
		if !c.Given("last-resort") {
			s.LastResort = was.LastResort
		}
		if err := p.SetSettings(ctx, s); err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.Stdout, "pool %q: evict after %d failures in a row (0: never), last resort %s\n", f.pool, s.EvictAfter, s.LastResort)
		return err
	})
}

// Pick is assign pick: the least-used member, or n of them in one round
// trip, with a request id or a sticky key; with --lease, the least used
// with room, leased (Pool.PickLease).
func Pick(c *cli.Command, args []string) int {
	var f poolFlags
	var n int
	var id, sticky string
	f.register(c)
	c.IntVar(&n, "n", 1, "picks to make, `N` from 1 to 10000 (more than one go in one round trip)")
	c.StringVar(&id, "id", "", "request `ID`: a retry with the same id returns the same member and counts once (only with --n 1)")
	c.StringVar(&sticky, "sticky", "", "sticky `KEY`: the member this key got last, while it is active and not cooling; else the least used, which the key keeps (only with --n 1)")
	var lease time.Duration
	c.DurationVar(&lease, "lease", 0, "lease the member for `DURATION` (1ms to 24h) under its concurrency cap: prints member, lease id and deadline; end it with release --member")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	if err := c.NotWith("lease", ": give one or the other", "id", "n", "sticky"); err != nil {
		return c.Refuse(err)
	}
	if c.Given("lease") {
		if lease < assign.MinLeaseTTL || lease > assign.MaxLeaseTTL {
			return c.Refuse(fmt.Errorf("--lease %v: want %v to %v", lease, assign.MinLeaseTTL, assign.MaxLeaseTTL))
		}
		return f.run(c, time.Minute, func(ctx context.Context, p *assign.Pool) error {
			l, err := p.PickLease(ctx, lease)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.Stdout, "%s\t%s\t%s\n", l.Member, l.ID, l.Deadline.UTC().Format(time.RFC3339Nano))
			return err
		})
	}
	if id != "" && n != 1 {
		return c.Refuse(errors.New("--id works with --n 1 only"))
	}
	if err := c.NotWith("sticky", ": give one or the other", "id", "n"); err != nil {
		return c.Refuse(err)
	}
	return f.run(c, time.Minute, func(ctx context.Context, p *assign.Pool) error {
		var rs []assign.Result
		var err error
		if c.Given("sticky") {
			m, perr := p.PickSticky(ctx, sticky)
			rs = []assign.Result{{Member: m, Err: perr}}
		} else if id != "" {
			m, perr := p.PickID(ctx, id)
			rs = []assign.Result{{Member: m, Err: perr}}
		} else {
			rs, err = p.PickBatch(ctx, n)
		}
		for _, r := range rs {
			if r.Err == nil {
				fmt.Fprintln(c.Stdout, r.Member)
			}
			err = cmp.Or(err, r.Err)
		}
		return err
	})
}

// Acquire is assign acquire: a lease on the member with the fewest leases
// open, of the pool's least-in-flight variant (Leases.PickLeastInFlight),
// printed as the member, the lease id and its deadline on Redis's clock,
// tab-separated, on one line.
func Acquire(c *cli.Command, args []string) int {
	var f poolFlags
	var ttl time.Duration
	f.register(c)
	c.DurationVar(&ttl, "ttl", 0, "how long the lease lasts unless released, `DURATION` from 1ms to 24h; reclaimed by the server after (required)")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	if !c.Given("ttl") {
		return c.Refuse(errors.New("--ttl is required: want a duration such as 30s"))
	}
	if ttl < assign.MinLeaseTTL || ttl > assign.MaxLeaseTTL {
		return c.Refuse(fmt.Errorf("--ttl %v: want %v to %v", ttl, assign.MinLeaseTTL, assign.MaxLeaseTTL))
	}
	return f.runLeases(c, time.Minute, func(ctx context.Context, l *assign.Leases) error {
		lease, err := l.PickLeastInFlight(ctx, ttl)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.Stdout, "%s\t%s\t%s\n", lease.Member, lease.ID, lease.Deadline.UTC().Format(time.RFC3339Nano))
		return err
	})
}

// Release is assign release: leases ended by their ids; one released
// already, or reclaimed at its deadline, is counted apart and is no error.
func Release(c *cli.Command, args []string) int {
	var f poolFlags
	var member string
	f.register(c)
	c.StringVar(&member, "member", "", "the `MEMBER` of leases that pick --lease gave (without it: leases of acquire)")
	ids, status, ok := c.ParseArgs(args)
	if !ok {
		return status
	}
	if len(ids) == 0 || len(ids) > assign.MaxBatch {
		return c.Refuse(fmt.Errorf("release: %d lease ids: want 1 to %d, as acquire printed them", len(ids), assign.MaxBatch))
	}
	if c.Given("member") {
		return f.run(c, time.Minute, func(ctx context.Context, p *assign.Pool) error {
			open := 0
			for _, id := range ids {
				was, err := p.Release(ctx, assign.Lease{Member: member, ID: id})
				if err != nil {
					return err
				}
				if was {
					open++
				}
			}
			_, err := fmt.Fprintf(c.Stdout, "released %d leases of %q in pool %q; %d settled already (released before, or past their deadline)\n",
				open, member, f.pool, len(ids)-open)
			return err
		})
	}
	return f.runLeases(c, time.Minute, func(ctx context.Context, l *assign.Leases) error {
		open := 0
		for _, id := range ids {
			was, err := l.Release(ctx, assign.Lease{ID: id})
			if err != nil {
				return err
			}
			if was {
				open++
			}
		}
		_, err := fmt.Fprintf(c.Stdout, "released %d leases of pool %q; %d settled already (released before, or reclaimed at their deadline)\n",
			open, f.pool, len(ids)-open)
		return err
	})
}

// Leases is assign leases: the pool's least-in-flight variant, the
// leases open on each member. With --add or --remove it changes its
// members instead.
func Leases(c *cli.Command, args []string) int {
	var f poolFlags
	var format string
	var add, remove bool
	f.register(c)
	c.StringVar(&format, "format", "table", "output format: table or json")
	c.BoolVar(&add, "add", false, "make the MEMBERs eligible for leases (a removed one comes back with its open leases)")
	c.BoolVar(&remove, "remove", false, "make the MEMBERs ineligible; their open leases settle as usual")
	members, status, ok := c.ParseArgs(args)
	if !ok {
		return status
	}
	if err := c.NotWith("add", ": give one or the other", "remove"); err != nil {
		return c.Refuse(err)
	}
	if !add && !remove && len(members) > 0 {
		return c.Refuse(fmt.Errorf("members given without --add or --remove: %q", members))
	}
	if err := checkFormat(format); err != nil {
		return c.Refuse(err)
	}
	return f.runLeases(c, time.Minute, func(ctx context.Context, l *assign.Leases) error {
		switch {
		case add:
			n, err := l.Add(ctx, members...)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.Stdout, "added %d to the leases of pool %q; %d there already\n", n, f.pool, len(members)-n)
			return err
		case remove:
			if err := l.Remove(ctx, members...); err != nil {
				return err
			}
			_, err := fmt.Fprintf(c.Stdout, "removed %d from the leases of pool %q (their open leases settle as usual)\n", len(members), f.pool)
			return err
		}
		ms, open, err := l.List(ctx)
		if err != nil {
			return err
		}
		return writeInFlight(c.Stdout, f.pool, ms, open, format)
	})
}

// Bench is assign bench: picks a second on a pool of the given Redis,
// beside redis-benchmark (package assignbench).
func Bench(c *cli.Command, args []string) int {
	cfg := assignbench.DefaultConfig("")
	var asJSON bool
	redisFlag(c, &cfg.RedisURL)
	c.StringVar(&cfg.Pool, "pool", cfg.Pool, "pool `NAME` to use; it is emptied and refilled")
	c.IntVar(&cfg.PoolSize, "pool-size", cfg.PoolSize, "members in the pool, 1 to 100000")
	c.IntVar(&cfg.Workers, "workers", cfg.Workers, "goroutines picking (and redis-benchmark clients), 1 to 10000")
	c.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of each afloat run, 100ms to 1h")
	c.Var(cli.IntList{Ints: &cfg.Batches, Want: fmt.Sprintf("batch sizes from 0 (none) to %d", assign.MaxBatch)}, "batch", "batch sizes to run, comma-separated: 0 is one pick a call (auto-pipelined), n is n picks a round trip")
	c.BoolVar(&cfg.Peer, "peer", false, "after each run, redis-benchmark on the same server and pool: EVALSHA of the same script, --workers clients, -P batch, as many picks")
	c.BoolVar(&cfg.Busy, "busy", false, "a busy pool: of every ten members three weighted 2 to 4, one cooling for an hour, one rate-limited (never used up)")
	c.BoolVar(&asJSON, "json", false, "print the results as JSON")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	if cfg.RedisURL == "" {
		return c.Refuse(errRedisRequired)
	}
	ctx, stop := cli.Interruptible()
	defer stop()
	rs, err := assignbench.Run(ctx, cfg, func(s string) { fmt.Fprintln(c.Stderr, s) })
	// A failed bench still prints what it measured, errors counted, and
	// then says why it failed.
	if len(rs) > 0 || err == nil {
		if asJSON {
			cli.WriteJSON(c.Stdout, rs)
		} else {
			assignbench.Write(c.Stdout, rs)
		}
	}
	return assignFail(c, err)
}

// ProxyCheck is proxy check: candidate proxies from a list probed, and a
// pool brought in line with the probes when one is named.
func ProxyCheck(c *cli.Command, args []string) int {
	probe := proxypool.DefaultProbeConfig("")
	// One check, one probe each: there is no streak to wait for, so the
	// pool follows this probe (Fall and Rise damp a proxypool.Pool.Run loop).
	probe.Fall, probe.Rise = 1, 1
	var f poolFlags
	var pol assign.RestorePolicy
	c.StringVar(&probe.URL, "probe", "", "`URL` fetched through each proxy, http:// or https:// (required)")
	c.DurationVar(&probe.Timeout, "timeout", probe.Timeout, "per probe, 10ms to 1m")
	c.IntVar(&probe.Concurrency, "concurrency", probe.Concurrency, "probes at once, 1 to 1000")
	c.StringVar(&f.redisURL, "redis", os.Getenv("AFLOAT_REDIS_URL"), "with --pool: Redis `URL` (default $AFLOAT_REDIS_URL)")
	c.StringVar(&f.pool, "pool", "", "pool `NAME` to bring in line with the probes (optional)")
	c.TextVar(&pol, "policy", pol, "restore `POLICY` for recovered members: current-minimum, keep-history or zero")
	files, status, ok := c.ParseArgs(args)
	if !ok {
		return status
	}
	var err error
	switch {
	case len(files) != 1:
		err = fmt.Errorf("want one FILE (or - for standard input), got %d arguments", len(files))
	case probe.URL == "":
		err = errors.New("--probe is required: want an http:// or https:// URL to fetch through each proxy")
	case f.pool != "":
		err = f.check()
	}
	var proxies []*url.URL
	if err = cmp.Or(err, probe.Validate()); err == nil {
		proxies, err = readProxies(c, files[0])
	}
	if err != nil {
		return c.Refuse(err)
	}
	if f.pool == "" {
		ctx, stop := cli.Interruptible()
		defer stop()
		health, err := proxypool.Probe(ctx, proxies, probe)
		if err == nil {
			err = writeHealth(c.Stdout, health)
		}
		return c.Fail(err)
	}
	return f.run(c, 0, func(ctx context.Context, p *assign.Pool) error {
		pp, err := proxypool.New(p, probe, pol)
		if err != nil {
			return err
		}
		pp.Import(proxies...)
		rep, err := pp.Check(ctx)
		if err == nil {
			err = writeCheckReport(c.Stdout, f.pool, rep)
		}
		return err
	})
}

// readProxies reads the proxy list in file (- for standard input), and
// says on stderr which lines it skipped.
func readProxies(c *cli.Command, file string) ([]*url.URL, error) {
	in, name, err := c.Open(file)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	proxies, bad, err := proxypool.ParseList(in)
	for _, b := range bad {
		fmt.Fprintf(c.Stderr, "afloat proxy check: %s: skipped %v\n", name, b)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return proxies, nil
}
