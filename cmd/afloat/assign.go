package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/afloat/afloat/assign"
	"github.com/afloat/afloat/assign/assignbench"
)

// redisFlag adds --redis, defaulting to $AFLOAT_REDIS_URL.
func redisFlag(fs *command, v *string) {
	fs.StringVar(v, "redis", os.Getenv("AFLOAT_REDIS_URL"), "Redis `URL`, redis://[user:password@]host:port[/db] (default $AFLOAT_REDIS_URL)")
}

// assignPoolCommand returns the run function of assign add, remove,
// restore, list or pick: one function, for they share their flags, checks
// and connection.
func assignPoolCommand(sub string) func(*command, []string) int {
	return func(fs *command, args []string) int { return runAssignPool(fs, sub, args) }
}

func runAssignPool(fs *command, sub string, args []string) int {
	var (
		redisURL, pool, policy, format, id string
		count                              int64
		atMin                              bool
		n                                  int
	)
	redisFlag(fs, &redisURL)
	fs.StringVar(&pool, "pool", "", "pool `NAME`: 1 to 100 letters, digits, - _ . : (required)")
	switch sub {
	case "add":
		fs.Int64Var(&count, "count", 0, "the agreed initial count `N` of the new members, 0 to 2^53")
		fs.BoolVar(&atMin, "at-minimum", false, "start the new members at the active members' current minimum instead of --count")
	case "restore":
		fs.StringVar(&policy, "policy", "current-minimum", "count the members rejoin with: current-minimum, keep-history or zero (zero piles picks onto them)")
	case "list":
		fs.StringVar(&format, "format", "table", "output format: table or jsonl")
	case "pick":
		fs.IntVar(&n, "n", 1, "picks to make, `N` from 1 to 10000 (more than one go in one round trip)")
		fs.StringVar(&id, "id", "", "request `ID`: a retry with the same id returns the same member and counts once (only with --n 1)")
	}
	members, status, ok := fs.parseArgs(args)
	if !ok {
		return status
	}
	fail := fs.usage
	stdout := fs.stdout
	if redisURL == "" {
		return fail(errors.New("--redis is required (or set AFLOAT_REDIS_URL): want redis://host:port"))
	}
	if pool == "" {
		return fail(errors.New("--pool is required: want a pool name"))
	}
	takesMembers := sub == "add" || sub == "remove" || sub == "restore"
	if takesMembers && len(members) == 0 {
		return fail(errors.New("no members given: want one or more MEMBER arguments after the flags"))
	}
	if !takesMembers && len(members) > 0 {
		return fail(fmt.Errorf("unexpected argument %q", members[0]))
	}
	var pol assign.RestorePolicy
	if sub == "restore" {
		var err error
		if pol, err = assign.ParseRestorePolicy(policy); err != nil {
			return fail(fmt.Errorf("--policy: %w", err))
		}
	}
	if sub == "add" && (count < 0 || count > assign.MaxCount) {
		return fail(fmt.Errorf("--count %d: want an integer from 0 to %d", count, int64(assign.MaxCount)))
	}
	if sub == "add" && atMin && count != 0 {
		return fail(errors.New("--count and --at-minimum: give one or the other"))
	}
	if sub == "pick" && (n < 1 || n > assign.MaxBatch) {
		return fail(fmt.Errorf("--n %d: want 1 to %d", n, assign.MaxBatch))
	}
	if sub == "pick" && id != "" && n != 1 {
		return fail(errors.New("--id works with --n 1 only"))
	}
	if sub == "list" && format != "table" && format != "jsonl" {
		return fail(fmt.Errorf("--format %q: want table or jsonl", format))
	}
	if err := checkRedisURL("--redis", redisURL); err != nil {
		return fail(err)
	}
	if err := assign.CheckPoolName(pool); err != nil {
		return fail(fmt.Errorf("--pool: %w", err))
	}

	p, client, err := openPool(redisURL, pool)
	if err != nil {
		return fs.assignError(err)
	}
	defer client.Close()
	ctx, stop := interruptible()
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()

	switch sub {
	case "add":
		var r assign.AddResult
		if atMin {
			r, err = p.AddAtMinimum(ctx, members...)
		} else {
			r, err = p.Add(ctx, count, members...)
		}
		if err == nil {
			fmt.Fprintf(stdout, "added %d to pool %q", r.Added, pool)
			if r.Active > 0 {
				fmt.Fprintf(stdout, "; %d already active (counts untouched)", r.Active)
			}
			if r.Removed > 0 {
				fmt.Fprintf(stdout, "; %d removed (afloat assign restore brings them back)", r.Removed)
			}
			fmt.Fprintln(stdout)
		}
	case "remove":
		if err = p.Remove(ctx, members...); err == nil {
			fmt.Fprintf(stdout, "removed %d from pool %q (counts kept for restore)\n", len(members), pool)
		}
	case "restore":
		if err = p.Restore(ctx, pol, members...); err == nil {
			fmt.Fprintf(stdout, "restored %d to pool %q at %s\n", len(members), pool, pol)
		}
	case "list":
		var ms []assign.Member
		if ms, err = p.List(ctx); err == nil {
			writeMembers(stdout, ms, format)
		}
	case "pick":
		err = pick(ctx, p, n, id, stdout)
	}
	if err != nil {
		return fs.assignError(err)
	}
	return exitOK
}

// openPool connects to redisURL and opens the pool name there. The caller
// closes the client.
func openPool(redisURL, name string) (*assign.Pool, *assign.Client, error) {
	c, err := assign.Dial(redisURL)
	if err != nil {
		return nil, nil, err
	}
	p, err := assign.New(c, name)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return p, c, nil
}

func pick(ctx context.Context, p *assign.Pool, n int, id string, stdout io.Writer) error {
	if n == 1 {
		var m string
		var err error
		if id != "" {
			m, err = p.PickID(ctx, id)
		} else {
			m, err = p.Pick(ctx)
		}
		if err == nil {
			fmt.Fprintln(stdout, m)
		}
		return err
	}
	res, err := p.PickBatch(ctx, n)
	if err != nil {
		return err
	}
	var first error
	for _, r := range res {
		if r.Err != nil {
			first = cmp.Or(first, r.Err)
			continue
		}
		fmt.Fprintln(stdout, r.Member)
	}
	return first
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func writeMembers(w io.Writer, ms []assign.Member, format string) {
	if format == "jsonl" {
		enc := json.NewEncoder(w)
		for _, m := range ms {
			enc.Encode(m)
		}
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tCOUNT\tSTATE\tFAILURES")
	for _, m := range ms {
		state := "active"
		if !m.Active {
			state = "removed"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", m.Name, m.Count, state, m.Failures)
	}
	tw.Flush()
}

// assignError prints a failed pool operation: bad input and an unknown pool
// or member are refusals (exit 2); an empty pool, an unreachable server or
// an ambiguous outcome are failures while running (exit 1).
func (c *command) assignError(err error) int {
	if errors.Is(err, assign.ErrInvalid) || errors.Is(err, assign.ErrUnknownPool) || errors.Is(err, assign.ErrUnknownMember) {
		return c.usage(err)
	}
	return c.failed(err)
}

// intList is a comma-separated list of integers.
type intList []int

func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, n := range *l {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(v string) error {
	var out intList
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n > assign.MaxBatch {
			return fmt.Errorf("want comma-separated batch sizes from 0 (none) to %d", assign.MaxBatch)
		}
		out = append(out, n)
	}
	*l = out
	return nil
}

func runAssignBench(fs *command, args []string) int {
	cfg := assignbench.DefaultConfig("")
	batches := intList(cfg.Batches)
	var asJSON bool
	redisFlag(fs, &cfg.RedisURL)
	fs.StringVar(&cfg.Pool, "pool", cfg.Pool, "pool `NAME` to use; it is emptied and refilled")
	fs.IntVar(&cfg.PoolSize, "pool-size", cfg.PoolSize, "members in the pool, 1 to 100000")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "goroutines picking (and redis-benchmark clients), 1 to 10000")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of each afloat run, 100ms to 1h")
	fs.Var(&batches, "batch", "batch sizes to run, comma-separated: 0 is one pick a call (auto-pipelined), n is n picks a round trip")
	fs.BoolVar(&cfg.Peer, "peer", false, "after each run, redis-benchmark on the same server and pool: EVALSHA of the same script, --workers clients, -P batch, as many picks")
	fs.BoolVar(&asJSON, "json", false, "print the results as JSON")
	if status, ok := fs.parse(args); !ok {
		return status
	}
	stdout, stderr := fs.stdout, fs.stderr
	cfg.Batches = batches
	if cfg.RedisURL == "" {
		return fs.usage(errors.New("--redis is required (or set AFLOAT_REDIS_URL): want redis://host:port"))
	}
	if err := checkRedisURL("--redis", cfg.RedisURL); err != nil {
		return fs.usage(err)
	}
	if err := cfg.Validate(); err != nil {
		return fs.usage(err)
	}
	ctx, stop := interruptible()
	defer stop()
	rs, err := assignbench.Run(ctx, cfg, func(s string) { fmt.Fprintln(stderr, s) })
	// A failed bench still prints what it measured, errors counted, and
	// then says why it failed.
	if len(rs) > 0 || err == nil {
		if asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", " ")
			enc.Encode(rs)
		} else {
			assignbench.Write(stdout, rs)
		}
	}
	if err != nil {
		return fs.failed(err)
	}
	return exitOK
}

func printAssignBenchNotes(w io.Writer) {
	fmt.Fprint(w, `
Each batch size runs for --duration: --workers goroutines pick in a loop
(batch 0: Pick, one pick a call, which the client pipelines across the
goroutines on its own; batch n: PickBatch(n), n picks in one script a
round trip, up to 256 a script).
p50 and p99 are per call. max−min is the spread of the pool's counts after
the run. With --peer, redis-benchmark then makes as many picks with the
same script by SHA on the same keys, with --workers clients and -P batch,
and afloat ÷ peer compares the two. Run it where nothing else competes for
the cores (docs/benchmarks.md).

A bench that fails while running (the server lost, counts that do not add
up) prints the results it has, the failed run's with its errors counted,
then the error, and exits 1.
`)
}

func runProxyCheck(fs *command, args []string) int {
	probe := assign.DefaultProbeConfig("")
	// One check, one probe each: there is no streak to wait for, so the
	// pool follows this probe (Fall and Rise damp a ProxyPool.Run loop).
	probe.Fall, probe.Rise = 1, 1
	var redisURL, pool, policy string
	fs.StringVar(&probe.URL, "probe", "", "`URL` fetched through each proxy, http:// or https:// (required)")
	fs.DurationVar(&probe.Timeout, "timeout", probe.Timeout, "per probe, 10ms to 1m")
	fs.IntVar(&probe.Concurrency, "concurrency", probe.Concurrency, "probes at once, 1 to 1000")
	fs.StringVar(&redisURL, "redis", os.Getenv("AFLOAT_REDIS_URL"), "with --pool: Redis `URL` (default $AFLOAT_REDIS_URL)")
	fs.StringVar(&pool, "pool", "", "pool `NAME` to bring in line with the probes (optional)")
	fs.StringVar(&policy, "policy", "current-minimum", "restore policy for recovered members: current-minimum, keep-history or zero")
	files, status, ok := fs.parseArgs(args)
	if !ok {
		return status
	}
	fail := fs.usage
	stdout, stderr := fs.stdout, fs.stderr
	if len(files) != 1 {
		return fail(fmt.Errorf("want one FILE (or - for standard input), got %d arguments", len(files)))
	}
	if probe.URL == "" {
		return fail(errors.New("--probe is required: want an http:// or https:// URL to fetch through each proxy"))
	}
	if err := probe.Validate(); err != nil {
		return fail(err)
	}
	if err := checkURLPort("--probe", probe.URL); err != nil {
		return fail(err)
	}
	pol, err := assign.ParseRestorePolicy(policy)
	if err != nil {
		return fail(fmt.Errorf("--policy: %w", err))
	}
	if pool != "" && redisURL == "" {
		return fail(errors.New("--pool needs --redis (or AFLOAT_REDIS_URL)"))
	}
	if pool != "" {
		if err := checkRedisURL("--redis", redisURL); err != nil {
			return fail(err)
		}
		if err := assign.CheckPoolName(pool); err != nil {
			return fail(fmt.Errorf("--pool: %w", err))
		}
	}
	var in io.Reader = fs.stdin
	name := "standard input"
	if files[0] != "-" {
		f, err := os.Open(files[0])
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		in, name = f, files[0]
	}
	proxies, bad, err := assign.ParseProxyList(in)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", name, err))
	}
	if len(proxies) == 0 {
		// Nothing to probe: a wrong file, not a check that found nothing.
		for _, b := range bad {
			fmt.Fprintf(stderr, "afloat proxy check: %s: %v\n", name, b)
		}
		if len(bad) == 0 {
			return fail(fmt.Errorf("%s: no proxy line: want one host:port or URL a line", name))
		}
		return fail(fmt.Errorf("%s: no valid proxy line: %d bad %s above", name, len(bad), plural(len(bad), "line", "lines")))
	}
	for _, b := range bad {
		fmt.Fprintf(stderr, "afloat proxy check: %s: skipped %v\n", name, b)
	}
	ctx, stop := interruptible()
	defer stop()
	var health []assign.Health
	var rep assign.CheckReport
	if pool != "" {
		p, client, err := openPool(redisURL, pool)
		if err != nil {
			return fs.assignError(err)
		}
		defer client.Close()
		pp, err := assign.NewProxyPool(p, probe, pol)
		if err != nil {
			return fail(err)
		}
		pp.Import(proxies...)
		if rep, err = pp.Check(ctx); err != nil {
			return fs.assignError(err)
		}
		health = rep.Health
	} else if health, err = assign.CheckProxies(ctx, proxies, probe); err != nil {
		return fail(err)
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROXY\tHEALTHY\tSTATUS\tTOOK\tERROR")
	healthy := 0
	for _, h := range health {
		status := "-"
		if h.Status != 0 {
			status = strconv.Itoa(h.Status)
		}
		if h.Healthy {
			healthy++
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\t%v\t%s\n", h.Proxy, h.Healthy, status, h.Took.Round(time.Millisecond), h.Err)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "%d of %d healthy; %d bad lines skipped\n", healthy, len(health), len(bad))
	if pool != "" {
		fmt.Fprintf(stdout, "pool %q: %d joined, %d restored, %d left\n", pool, len(rep.Joined), len(rep.Restored), len(rep.Left))
	}
	return exitOK
}
