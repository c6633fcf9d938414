// Command quotascale measures whether the global quota's coordinator
// keeps its head above water with many tenants (issue 44): a 3-member
// etcd, two coordinator replicas and three region agents, each an OS
// process on loopback (quota/scale), with N hard tenants in every region.
// It prints, beside the goals, and writes as JSON (docs/benchmarks.md,
// "The quota at scale"):
//
//   - the time from the agents' start until every tenant holds a valid
//     lease in every region (the agents' GET /readyz, polled);
//   - steady renewals a second and their p99 (the agents' renewal
//     histograms), etcd's writes a second (its own counters), the
//     coordinators' CPU and memory and the agents' memory (/proc);
//   - three faults one after the other — kill -9 of the leading
//     coordinator (restarted after), a SIGSTOP of it (then SIGCONT),
//     every region agent restarted at once (SIGTERM, then started again)
//     — each followed by the time until every tenant is valid again;
//     then the same three with CPU-bound busy loops competing for the
//     cores.
//
// Every wait is bounded: a cluster that never leases every tenant, or
// does not recover from a fault, is reported so and the run goes on.
//
//	make bench-quota-scale                      # 100,000 tenants
//	make bench-quota-scale SCALE_FLAGS='--tenants 2000'
//
// It is a module of its own, beside bench/quotapeers: measurement stays
// out of the product.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/afloat/afloat/quota/scale"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quotascale:", err)
		os.Exit(1)
	}
}

// goals are the issue's: what the figures are compared with.
var goals = struct {
	LeasedWithin   time.Duration
	CoordinatorRSS int64
	ValidAgain     time.Duration
}{30 * time.Second, 1 << 30, 10 * time.Second}

// report is the run, as JSON.
type report struct {
	Date       string    `json:"date"`
	Command    string    `json:"command"`
	Commit     string    `json:"commit,omitempty"`
	Go         string    `json:"go"`
	CPUs       int       `json:"cpus"`
	CPUModel   string    `json:"cpu_model,omitempty"`
	LoadBefore []float64 `json:"load_before"`
	LoadAfter  []float64 `json:"load_after"`
	Etcd       string    `json:"etcd_version,omitempty"`

	Tenants      int     `json:"tenants"`
	Regions      int     `json:"regions"`
	Rate         float64 `json:"rate"`
	Burst        float64 `json:"burst"`
	LeaseS       float64 `json:"lease_s"`
	MaxTxnOps    int     `json:"max_txn_ops"`
	Coordinators int     `json:"coordinators"`
	// MemoryMB is the coordinators' --memory-limit-mb; 0 for none.
	MemoryMB int `json:"coordinator_memory_limit_mb,omitempty"`
	// Handover: the agents ran with --handover-file.
	Handover bool `json:"handover"`
	// ConfigFile is the config file's name: quota.json or quota.yaml.
	ConfigFile string `json:"config_file"`

	Goals struct {
		LeasedWithinS    float64 `json:"leased_within_s"`
		CoordinatorRSS   int64   `json:"coordinator_rss_bytes"`
		ValidAgainWithin float64 `json:"valid_again_within_s"`
	} `json:"goals"`

	Leasing    scale.Leasing      `json:"leasing"`
	LeasingCPU map[string]float64 `json:"leasing_cpu_cores"`
	Steady     *scale.Steady      `json:"steady,omitempty"`
	Faults     []scale.Recovery   `json:"faults"`
	BusyFaults []scale.Recovery   `json:"busy_faults"`
	// BusyCPU is what the busy loops used while they ran, in cores.
	BusyCPU float64                    `json:"busy_cpu_cores"`
	Traffic map[string]scale.Decisions `json:"traffic"`
	PeakRSS map[string]int64           `json:"peak_rss_bytes"`
	Skipped string                     `json:"skipped,omitempty"`
	Stop    string                     `json:"stop_error,omitempty"`
	Dir     string                     `json:"dir,omitempty"`
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("quotascale", flag.ContinueOnError)
	afloat := fs.String("afloat", "", "the afloat `BINARY` (default: built from this repository into the run's folder)")
	etcdBin := fs.String("etcd", "", "the etcd `BINARY` (default: etcd on PATH; make deps-etcd installs Debian's etcd-server)")
	tenants := fs.Int("tenants", 100_000, "hard tenants, each in every region (1 to 100000)")
	rate := fs.Float64("rate", 100, "each tenant's R, tokens a second")
	burst := fs.Float64("burst", 200, "each tenant's B, tokens")
	lease := fs.Duration("lease", 10*time.Second, "each tenant's lease duration")
	maxTxnOps := fs.Int("max-txn-ops", 1024, "etcd's --max-txn-ops and the config's etcd.max_txn_ops (0: etcd's default, 128)")
	coordinators := fs.Int("coordinators", 2, "coordinator replicas (1 to 5)")
	leaseBound := fs.Duration("lease-bound", 2*time.Minute, "how long to wait, from the agents' start, for every tenant to be leased")
	faultBound := fs.Duration("fault-bound", 2*time.Minute, "how long to wait, from a fault's start, for every tenant to be valid again")
	steady := fs.Duration("steady", 20*time.Second, "the steady window over which renewals, etcd's writes and CPU are measured (1s to 10m)")
	warm := fs.Duration("warm", 5*time.Second, "the wait between every tenant leased and the steady window")
	pause := fs.Duration("pause", 10*time.Second, "how long the leading coordinator is stopped (SIGSTOP) in the pause fault")
	busy := fs.Int("busy", 2, "CPU-bound busy loops for the second round of faults (0: no second round)")
	trafficTenants := fs.Int("traffic-tenants", 5, "tenants asked through each region's decision API (0: no traffic)")
	trafficRate := fs.Float64("traffic-rate", 20, "requests a second for each of them into each region")
	faults := fs.Bool("faults", true, "run the faults")
	out := fs.String("out", "", "write the report as JSON to `FILE`")
	dir := fs.String("dir", "", "the run's folder (default: a new temporary one, removed at the end unless --keep)")
	keep := fs.Bool("keep", false, "keep the run's folder (the processes' output, etcd's data)")
	eventLogs := fs.Bool("event-logs", false, "give every coordinator and agent an --event-log in the run's folder, for afloat quota check and for reading what happened (with --keep)")
	memoryMB := fs.Int("coordinator-memory-limit-mb", 0, "the coordinators' --memory-limit-mb, `MB` MiB (0: none)")
	yamlConfig := fs.Bool("yaml", false, "write the cluster's config file in YAML (quota.yaml) rather than JSON (quota.json); at 100,000 tenants every process reads it about 2.4 times slower")
	handover := fs.Bool("handover", true, "give every agent a --handover-file, so that the regions' restart resumes the leases (false: each restarted agent detaches and attaches again)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *steady < time.Second || *steady > 10*time.Minute {
		return fmt.Errorf("--steady %v: want 1s to 10m", *steady)
	}
	if *busy < 0 || *busy > 16 || *trafficTenants < 0 || *trafficTenants > 100 || !(*trafficRate > 0 && *trafficRate <= 1000) {
		return fmt.Errorf("--busy %d, --traffic-tenants %d, --traffic-rate %v: want 0 to 16, 0 to 100, above 0 and at most 1000", *busy, *trafficTenants, *trafficRate)
	}
	if *etcdBin == "" {
		p, err := exec.LookPath("etcd")
		if err != nil {
			return fmt.Errorf("no etcd on PATH (make deps-etcd installs Debian's etcd-server), and no --etcd")
		}
		*etcdBin = p
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "afloat-quotascale-")
		if err != nil {
			return err
		}
		*dir = d
		if !*keep {
			defer os.RemoveAll(d)
		}
	}
	if *afloat == "" {
		*afloat = filepath.Join(*dir, "afloat")
		fmt.Fprintf(stdout, "quotascale: building afloat into %s\n", *afloat)
		// In afloat's own module (this one replaces it with ../..), whose
		// go.sum has the command's dependencies.
		root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/afloat/afloat").Output()
		if err != nil {
			return fmt.Errorf("go list -m github.com/afloat/afloat: %v", err)
		}
		build := exec.Command("go", "build", "-o", *afloat, "./cmd/afloat")
		build.Dir = strings.TrimSpace(string(root))
		if b, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, b)
		}
	}
	cfg := scale.DefaultConfig(*afloat, *etcdBin, *dir)
	cfg.Tenants, cfg.Rate, cfg.Burst, cfg.Lease, cfg.MaxTxnOps, cfg.Coordinators = *tenants, *rate, *burst, *lease, *maxTxnOps, *coordinators
	cfg.EventLogs, cfg.CoordinatorMemoryMB, cfg.Handover, cfg.YAML = *eventLogs, *memoryMB, *handover, *yamlConfig
	c, err := scale.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	rep := &report{Date: time.Now().UTC().Format(time.RFC3339), Command: "cd bench/quotascale && go run . " + strings.Join(args, " "),
		Commit: commit(), Go: runtime.Version(), CPUs: runtime.NumCPU(), CPUModel: cpuModel(), LoadBefore: loadavg(), Etcd: etcdVersion(*etcdBin),
		Tenants: cfg.Tenants, Regions: len(cfg.Regions), Rate: cfg.Rate, Burst: cfg.Burst, LeaseS: cfg.Lease.Seconds(), MaxTxnOps: cfg.MaxTxnOps, MemoryMB: cfg.CoordinatorMemoryMB, Handover: cfg.Handover, ConfigFile: cfg.ConfigName(),
		Coordinators: cfg.Coordinators, LeasingCPU: map[string]float64{}, PeakRSS: map[string]int64{}}
	if *keep {
		rep.Dir = *dir
	}
	rep.Goals.LeasedWithinS, rep.Goals.CoordinatorRSS, rep.Goals.ValidAgainWithin = goals.LeasedWithin.Seconds(), goals.CoordinatorRSS, goals.ValidAgain.Seconds()
	say := func(format string, a ...any) {
		fmt.Fprintf(stdout, "%s quotascale: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, a...))
	}
	say("%d tenants × %d regions (R %g/s, B %g, lease %v), %d coordinators, etcd %s ×3 --max-txn-ops %s; load %v; run in %s",
		cfg.Tenants, len(cfg.Regions), cfg.Rate, cfg.Burst, cfg.Lease, cfg.Coordinators, rep.Etcd, txnOps(cfg.MaxTxnOps), rep.LoadBefore, *dir)
	defer c.Kill() // whatever happens, nothing outlives the run

	samp := c.Sample(time.Second)
	if err := c.StartEtcd(ctx); err != nil {
		return err
	}
	say("etcd healthy")
	began := time.Now()
	if err := c.StartCoordinators(ctx); err != nil {
		return err
	}
	say("coordinators serving, one leading, %v after their start", time.Since(began).Round(10*time.Millisecond))
	u0 := samp.Snapshot()
	if err := c.StartAgents(ctx); err != nil {
		return err
	}
	say("agents serving %v after their start", time.Since(c.AgentsStarted()).Round(10*time.Millisecond))
	var tr *scale.Traffic
	if *trafficTenants > 0 {
		var names []string
		for i := range min(*trafficTenants, cfg.Tenants) {
			names = append(names, scale.TenantName(i*cfg.Tenants/min(*trafficTenants, cfg.Tenants)))
		}
		tr = c.StartTraffic(names, *trafficRate)
	}
	lastSaid := time.Time{}
	rep.Leasing = c.WaitLeased(ctx, c.AgentsStarted(), *leaseBound, func(cv scale.Coverage) {
		if time.Since(lastSaid) >= 5*time.Second {
			lastSaid = time.Now()
			say("  %v after the agents' start: %v", time.Since(c.AgentsStarted()).Round(time.Second), cv)
		}
	})
	u1 := samp.Snapshot()
	for _, p := range c.Processes() {
		if v := scale.CPUShare(u0, u1, p.Name, rep.Leasing.Took); v >= 0 {
			rep.LeasingCPU[p.Name] = v
		}
	}
	say("%v (goal ≤ %v)", rep.Leasing, goals.LeasedWithin)

	if ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(*warm):
		}
		st := c.MeasureSteady(ctx, samp, *steady)
		rep.Steady = &st
		say("steady, %v: %v", *steady, st)
		for _, e := range st.Errors {
			say("  unread: %s", e)
		}
	}
	switch {
	case !*faults:
		rep.Skipped = "faults not asked for (--faults=false)"
	case !rep.Leasing.Leased:
		rep.Skipped = "the cluster never leased every tenant: no fault can be timed against it"
	}
	if rep.Skipped == "" && ctx.Err() == nil {
		rep.Faults = runFaults(ctx, c, *pause, *faultBound, say)
		if *busy > 0 && ctx.Err() == nil {
			loops, err := scale.StartBusyLoops(*busy, *dir)
			if err != nil {
				return err
			}
			cpu0, t0 := loops.CPU(), time.Now()
			say("%d busy loops compete for the cores", *busy)
			rep.BusyFaults = runFaults(ctx, c, *pause, *faultBound, say)
			rep.BusyCPU = float64(loops.CPU()-cpu0) / float64(time.Since(t0))
			loops.Stop()
		}
	}
	if rep.Skipped != "" {
		say("faults skipped: %s", rep.Skipped)
	}
	if tr != nil {
		rep.Traffic = tr.Stop()
	}
	for _, p := range c.Processes() {
		rep.PeakRSS[p.Name] = samp.PeakRSS(p.Name)
	}
	samp.Stop()
	if err := c.Stop(30 * time.Second); err != nil {
		rep.Stop = strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	rep.LoadAfter = loadavg()
	printSummary(stdout, rep)
	if *out != "" {
		b, err := json.MarshalIndent(rep, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			return err
		}
		say("wrote %s", *out)
	}
	return ctx.Err()
}

// runFaults deals the three faults one after the other, each timed.
func runFaults(ctx context.Context, c *scale.Cluster, pause, bound time.Duration, say func(string, ...any)) []scale.Recovery {
	var out []scale.Recovery
	for _, f := range []func() scale.Recovery{
		func() scale.Recovery { return c.KillLeader(ctx, bound) },
		func() scale.Recovery { return c.PauseLeader(ctx, pause, bound) },
		func() scale.Recovery { return c.RestartAgents(ctx, bound) },
	} {
		if ctx.Err() != nil {
			break
		}
		r := f()
		say("%v (goal ≤ %v)", r, goals.ValidAgain)
		out = append(out, r)
	}
	return out
}

func printSummary(w io.Writer, rep *report) {
	limit := ""
	if rep.MemoryMB != 0 {
		limit = fmt.Sprintf(" (--memory-limit-mb %d)", rep.MemoryMB)
	}
	if rep.Handover {
		limit += ", agents with --handover-file"
	}
	limit += ", config " + rep.ConfigFile
	fmt.Fprintf(w, "\nquota at scale: %d tenants × %d regions, %d coordinators%s, etcd --max-txn-ops %s; load %v → %v\n",
		rep.Tenants, rep.Regions, rep.Coordinators, limit, txnOps(rep.MaxTxnOps), rep.LoadBefore, rep.LoadAfter)
	row := func(what, measured, goal string) { fmt.Fprintf(w, "  %-72s %-44s %s\n", what, measured, goal) }
	row("measure", "measured", "goal")
	leased := "NOT within " + rep.Leasing.Took.Round(time.Second).String() + fmt.Sprintf(" (best %d of %d pairs)", rep.Leasing.Best.Pairs(), rep.Tenants*rep.Regions)
	if rep.Leasing.Leased {
		leased = secs(rep.Leasing.Took)
	}
	row("every tenant leased in every region, from the start", leased, "≤ "+secs(goals.LeasedWithin))
	var coordRSS int64
	var peaks []string
	for name, rss := range rep.PeakRSS {
		if strings.HasPrefix(name, "coordinator") {
			coordRSS = max(coordRSS, rss)
		}
		if !strings.HasPrefix(name, "etcd") {
			peaks = append(peaks, fmt.Sprintf("%s %s", short(name), mib(rss)))
		}
	}
	sort.Strings(peaks)
	row("coordinator peak RSS (the larger replica)", mib(coordRSS), "≤ "+mib(goals.CoordinatorRSS))
	row("peak RSS, each", strings.Join(peaks, ", "), "")
	row("CPU from the agents' start to every tenant leased, cores", cpuList(rep.LeasingCPU), "")
	if st := rep.Steady; st != nil {
		renewals := "unmeasured: an agent's run counters unread"
		if st.Renewals >= 0 {
			renewals = fmt.Sprintf("%.0f/s / %.0f/s (installed %.0f/s, kept %.0f/s) in %.0f calls/s", st.Renewals, st.Failed, st.Installed, st.Kept, st.Calls)
		}
		row("steady renewals granted / failed", renewals, "")
		if f := st.FailureList(); f != "" {
			row("  failed calls and refused renewals", f, "")
		}
		latency := fmt.Sprintf("%s / %s", scale.Millis(st.P50), scale.Millis(st.P99))
		switch {
		case st.Histograms == 0:
			latency = "unmeasured: no agent's /metrics answered (see errors)"
		case st.Histograms < st.Agents:
			latency += fmt.Sprintf(" (%d of %d agents)", st.Histograms, st.Agents)
		}
		row("renewal p50 / p99", latency, "")
		etcd := "unmeasured"
		if st.EtcdProposals >= 0 {
			etcd = fmt.Sprintf("%.0f/s / %.0f/s / %.0f/s, WAL fsync p99 %s", st.EtcdProposals, st.EtcdTxns, st.EtcdPuts, scale.Millis(st.FsyncP99))
		}
		row("etcd proposals / txns / puts (member 0)", etcd, "")
		if st.Leader != "" {
			row("leading coordinator CPU (steady)", fmt.Sprintf("%.2f cores (%s)", st.CPU[st.Leader], st.Leader), "")
		}
		row("CPU over the steady window, cores", cpuList(st.CPU), "")
		var agents []string
		for name, rss := range st.RSS {
			if strings.HasPrefix(name, "region") {
				agents = append(agents, fmt.Sprintf("%s %s", strings.TrimPrefix(name, "region "), mib(rss)))
			}
		}
		sort.Strings(agents)
		row("agents' RSS (steady)", strings.Join(agents, ", "), "")
		row("largest agent scrape (GET /metrics)", fmt.Sprintf("%.1f MB, the longest %s", float64(st.ScrapeBytes)/1e6, secs(st.ScrapeTook)), "")
		for _, e := range st.Errors {
			row("  unread", e, "")
		}
	}
	for _, set := range []struct {
		title string
		rs    []scale.Recovery
	}{{"", rep.Faults}, {fmt.Sprintf(" (busy loops, %.2f cores)", rep.BusyCPU), rep.BusyFaults}} {
		for _, r := range set.rs {
			var got string
			switch {
			case r.Err != "" && r.Detail == "":
				got = "not dealt: " + r.Err
			case !r.Lost:
				got = "no lease lost"
			case r.Recovered:
				got = secs(r.Took) + fmt.Sprintf(" (worst %d of %d)", r.Worst.Pairs(), rep.Tenants*rep.Regions)
			default:
				got = "NOT RECOVERED within " + secs(r.Bound)
			}
			row("valid again after "+r.Fault+set.title, got, "≤ "+secs(goals.ValidAgain))
		}
	}
	if rep.Skipped != "" {
		row("faults", "skipped: "+rep.Skipped, "")
	}
	var regions []string
	for r, d := range rep.Traffic {
		regions = append(regions, fmt.Sprintf("%s %d/%d/%d", r, d.Allowed, d.Refused, d.Failed))
	}
	sort.Strings(regions)
	if len(regions) > 0 {
		row("decisions allowed/refused/failed", strings.Join(regions, ", "), "")
	}
	if rep.Stop != "" {
		row("stop", rep.Stop, "")
	}
}

// short names a process in a list: c0, c1 for the coordinators, m0 for
// etcd's members, eu for a region.
func short(name string) string {
	name = strings.Replace(name, "coordinator ", "c", 1)
	name = strings.TrimPrefix(name, "etcd ")
	return strings.TrimPrefix(name, "region ")
}

func cpuList(cpu map[string]float64) string {
	var out []string
	for name, v := range cpu {
		out = append(out, fmt.Sprintf("%s %.2f", short(name), v))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
func mib(b int64) string          { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
func txnOps(n int) string {
	if n == 0 {
		return "128 (etcd's default)"
	}
	return fmt.Sprint(n)
}

func loadavg() []float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	var l [3]float64
	fmt.Sscan(string(b), &l[0], &l[1], &l[2]) //nolint:errcheck // zeros then
	return l[:]
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func commit() string {
	b, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func etcdVersion(bin string) string {
	b, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return ""
	}
	first, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(strings.TrimPrefix(first, "etcd Version:"))
}
