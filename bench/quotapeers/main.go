// Command quotapeers runs afloat's global quota, a Gubernator cluster and a
// naive split side by side under one traffic shift and one partition, in
// wall-clock time on loopback, and writes what it measured as JSON (the
// console's global quota lab draws it; docs/benchmarks.md quotes it).
//
//	cd bench/quotapeers && go run . --out ../../web/static/data/quota-peers.json
//
// It is a module of its own so that Gubernator and its dependencies never
// become dependencies of afloat: the root module does not see this folder.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	guber "github.com/gubernator-io/gubernator/v2"
)

const tenantName = "acme"

var regionNames = []string{"eu", "us", "ap"}

// tenant is the one tenant all three limit: R tokens a second, burst B,
// and afloat's lease length.
type tenant struct {
	Rate  float64       `json:"rate"`
	Burst float64       `json:"burst"`
	Lease time.Duration `json:"-"`
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "quotapeers:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 2 && args[0] == "serve" {
		return serve(args[1])
	}
	fs := flag.NewFlagSet("quotapeers", flag.ContinueOnError)
	duration := fs.Duration("duration", 60*time.Second, "length of the run (4s to 2m): shift at a quarter, partition at half, heal at three quarters")
	out := fs.String("out", "", "write the result as JSON to this file (\"\" for none)")
	lease := fs.Duration("lease", 10*time.Second, "afloat's lease length (2s to 12s: B ≥ R·lease)")
	step := fs.Duration("step", 2*time.Second, "throughput search: length of each rate step (100ms to 10s)")
	p99 := fs.Duration("p99", time.Millisecond, "throughput search: the p99 from the schedule a rate must keep (100µs to 100ms)")
	reps := fs.Int("reps", 3, "throughput search: interleaved repetitions (1 to 5)")
	maxRate := fs.Float64("max-rate", 200_000, "throughput search: the highest rate tried (500 to 1000000 decisions/s)")
	bound := fs.Bool("bound", true, "run the bound comparison (the shift and the partition)")
	tput := fs.Bool("throughput", true, "run the throughput search")
	from := fs.String("from", "", "run nothing: print the tables of this JSON, written by an earlier --out")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from != "" {
		return printFrom(os.Stdout, *from)
	}
	if *step < 100*time.Millisecond || *step > 10*time.Second {
		return fmt.Errorf("--step %v: must be between 100ms and 10s", *step)
	}
	if *p99 < 100*time.Microsecond || *p99 > 100*time.Millisecond {
		return fmt.Errorf("--p99 %v: must be between 100µs and 100ms", *p99)
	}
	if *reps < 1 || *reps > 5 {
		return fmt.Errorf("--reps %d: must be between 1 and 5", *reps)
	}
	if *maxRate < 500 || *maxRate > 1_000_000 {
		return fmt.Errorf("--max-rate %g: must be between 500 and 1000000", *maxRate)
	}
	if *duration < 4*time.Second || *duration > 2*time.Minute {
		return fmt.Errorf("--duration %v: must be between 4s and 2m", *duration)
	}
	if *lease < 2*time.Second || *lease > 12*time.Second {
		return fmt.Errorf("--lease %v: must be between 2s and 12s", *lease)
	}
	t := tenant{Rate: 500, Burst: 6000, Lease: *lease}
	sc := defaultSchedule(t, *duration)
	dir, err := os.MkdirTemp("", "quotapeers")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rlExe, err := buildRatelimit(dir)
	if err != nil {
		return err
	}
	res := &result{}
	if *bound {
		if res, err = compare(context.Background(), t, sc, rlExe, dir); err != nil {
			return err
		}
		printTable(os.Stdout, res)
	}
	res.Command = "cd bench/quotapeers && go run . " + strings.Join(args, " ")
	if *tput {
		tp, err := throughput(context.Background(), tpSystems(rlExe, dir), tpOptions{P99: *p99, Step: *step, Reps: *reps, MaxRate: *maxRate})
		if err != nil {
			return err
		}
		res.Throughput = tp
		printThroughput(os.Stdout, tp)
	}
	if *out != "" {
		b, err := json.MarshalIndent(res, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// defaultSchedule: 2 R offered throughout — enough that every system has
// spent its initial burst before the shift — evenly at first; at a quarter
// of the run 96 % of it moves to eu; at half eu is cut off from the others
// (afloat: from its coordinator, which runs beside us; Gubernator: from
// both other peers, us owning the key); at three quarters the cut heals.
func defaultSchedule(t tenant, d time.Duration) schedule {
	total := 2 * t.Rate
	return schedule{
		Duration: d, Shift: d / 4, Partition: d / 2, Heal: 3 * d / 4,
		Hot: 0, Cut: 0, Owner: 1,
		Before: []float64{total / 3, total / 3, total / 3},
		After:  []float64{0.96 * total, 0.02 * total, 0.02 * total},
	}
}

func compare(ctx context.Context, t tenant, sc schedule, rlExe, dir string) (*result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := &result{
		Date: time.Now().UTC().Format(time.RFC3339), Go: runtime.Version(), Gubernator: "v2.13.0", Ratelimit: ratelimitVersion,
		CPUs: runtime.NumCPU(), LoadBefore: loadavg(), Tenant: t, LeaseS: t.Lease.Seconds(),
		Schedule: sc.json(), BinMS: float64(bin / time.Millisecond),
	}
	af, err := newAfloat(ctx, t, regionNames, sc.Owner)
	if err != nil {
		return nil, err
	}
	defer af.close()
	gb, err := newGubernator(ctx, t, regionNames, sc.Owner, limitIsBurst, guber.Behavior_GLOBAL)
	if err != nil {
		return nil, err
	}
	defer closeGubernator(gb)
	gr, err := newGubernator(ctx, t, regionNames, sc.Owner, limitIsRate, guber.Behavior_GLOBAL)
	if err != nil {
		return nil, err
	}
	defer closeGubernator(gr)
	gd, err := newGubernator(ctx, t, regionNames, sc.Owner, limitIsBurst, guber.Behavior_BATCHING)
	if err != nil {
		return nil, err
	}
	defer closeGubernator(gd)
	rs, err := newRatelimit(ctx, rlExe, dir, t, regionNames, sc.Owner, rlShared)
	if err != nil {
		return nil, err
	}
	defer rs.close()
	rp, err := newRatelimit(ctx, rlExe, dir, t, regionNames, sc.Owner, rlPerRegion)
	if err != nil {
		return nil, err
	}
	defer rp.close()
	nv := newNaive(t, len(regionNames))
	// afloat's regions refuse until their first lease: wait for it, so
	// that the run starts with every system able to admit.
	deadline := time.Now().Add(10 * time.Second)
	for !af.ready() {
		if time.Now().After(deadline) {
			return nil, errors.New("afloat: no lease in 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	systems := []struct {
		id  string
		sys system
	}{
		{"afloat", af}, {"gubernator_global", gb}, {"gubernator_global_rate", gr}, {"gubernator_default", gd},
		{"ratelimit_shared", rs}, {"ratelimit_per_region", rp}, {"naive", nv},
	}
	recs := make([]*recorder, len(systems))
	all := make([]system, len(systems))
	for i, s := range systems {
		recs[i] = newRecorder(sc)
		all[i] = s.sys
	}
	start := time.Now()
	go faults(ctx, start, sc, all)
	drive(ctx, start, all, sc, recs)
	res.LoadAfter = loadavg()
	for i, s := range systems {
		res.Systems = append(res.Systems, recs[i].summary(s.id, t, sc))
	}
	res.Seconds = seconds(sc)
	res.Offered = recs[0].offeredPerSecond()
	return res, nil
}

// faults cuts the partitioned region off at sc.Partition and heals it at
// sc.Heal, in every system at once.
func faults(ctx context.Context, start time.Time, sc schedule, systems []system) {
	for _, step := range []struct {
		at  time.Duration
		cut bool
	}{{sc.Partition, true}, {sc.Heal, false}} {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(start.Add(step.at))):
		}
		for _, s := range systems {
			s.partition(sc.Cut, step.cut)
		}
	}
}

// closeGubernator closes a cluster, waiting at most 5 s: Gubernator's
// Close can wait for ever on a peer call in flight (seen once:
// globalManager.Close never returned), and the process ends anyway.
func closeGubernator(g *gubernatorSystem) {
	closed := make(chan struct{})
	go func() { g.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		fmt.Fprintln(os.Stderr, "quotapeers: a Gubernator cluster did not close in 5 s; leaving it")
	}
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// printFrom prints the tables of a result written by --out.
func printFrom(w io.Writer, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	var res result
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("--from %s: %w", path, err)
	}
	if len(res.Systems) == 0 && res.Throughput == nil {
		return fmt.Errorf("--from %s: no bound run and no throughput search in it", path)
	}
	if len(res.Systems) > 0 {
		fmt.Fprintln(w, res.Command)
		printTable(w, &res)
	}
	if res.Throughput != nil {
		printThroughput(w, res.Throughput)
	}
	return nil
}
