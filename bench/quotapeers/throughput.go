package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/afloat/afloat/internal/loadgen"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	guber "github.com/gubernator-io/gubernator/v2"
	"google.golang.org/protobuf/proto"
)

// The throughput search: for each service, the most decisions a second it
// answers with p99 ≤ target from each request's scheduled time, the
// service pinned to one core and the generator (loadgen.Spin, one
// spinning thread with sockets of its own, the same for every service)
// to the other.
const (
	tpConns    = 64 // connections, one call awaiting its answer on each: more than any service here needs at its best rate
	tpFirst    = 500.0
	tpGrowth   = 1.25
	tpFailsEnd = 3  // consecutive saturated steps that end a search
	tpSaturate = 50 // a step whose p99 is this many times the target (or that answers too few) is saturated

	// A step in which the generator's own loop stalled (over 0.5 ms
	// without running) more than tpStallsPerS times a second measured the
	// machine, not the service: the VMs measured here take both cores
	// away for milliseconds at a time, in spells of seconds, which no
	// service answers through. Such a step is run again, up to tpAttempts
	// times in all, and the attempt with the fewest stalls is kept; every
	// step records its stalls and attempts, so a reader sees which rates
	// were measured undisturbed.
	tpStallsPerS = 2.5
	tpAttempts   = 3
)

// tpOptions shape the search.
type tpOptions struct {
	P99     time.Duration // the p99 a step must keep, from the schedule
	Step    time.Duration // length of each rate step
	Reps    int           // interleaved repetitions
	MaxRate float64       // the search stops above it
}

// tpService is one service under the search, started for it: where it
// listens, the protocol the generator speaks to it, and what stops it.
type tpService struct {
	addr string
	wire loadgen.Wire
	stop func()
}

type tpSystem struct {
	id    string
	start func(ctx context.Context) (*tpService, error)
}

// serviceCPU and generatorCPU: the cores the service and the generator are
// pinned to.
const (
	serviceCPU   = "0"
	generatorCPU = "1"
)

func tpSystems(rlExe, dir string) []tpSystem {
	return []tpSystem{
		{"afloat_rls", func(ctx context.Context) (*tpService, error) { return startSelf(ctx, "afloat", "grpc") }},
		{"afloat_http", func(ctx context.Context) (*tpService, error) { return startSelf(ctx, "afloat", "http") }},
		{"ratelimit", func(ctx context.Context) (*tpService, error) {
			rp, raddr, err := redisServer(serviceCPU)
			if err != nil {
				return nil, err
			}
			sp, addr, err := startRatelimit(ctx, rlExe, dir, raddr, 500, 10, serviceCPU)
			if err != nil {
				rp.stop()
				return nil, err
			}
			s, err := rlsService(addr)
			if err != nil {
				sp.stop()
				rp.stop()
				return nil, err
			}
			inner := s.stop
			s.stop = func() { inner(); sp.stop(); rp.stop() }
			return s, nil
		}},
		{"gubernator_global", func(ctx context.Context) (*tpService, error) { return startGubernatorSolo(ctx, guber.Behavior_GLOBAL) }},
		{"gubernator_default", func(ctx context.Context) (*tpService, error) {
			return startGubernatorSolo(ctx, guber.Behavior_BATCHING)
		}},
	}
}

// startSelf runs this program's serve subcommand as a child pinned to the
// service's core and returns a service speaking proto ("grpc": RLS, or
// "http": the decision API) to it.
func startSelf(ctx context.Context, what, proto string) (*tpService, error) {
	// GOGC: what afloat quota region runs its agent with (agent.GCPercent).
	out, stop, err := serveChild(what, "GOGC=400")
	if err != nil {
		return nil, err
	}
	addrs := map[string]string{}
	sc := bufio.NewScanner(out)
	for len(addrs) < 2 && sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok {
			addrs[k] = v
		}
		if what == "gubernator" && addrs["grpc"] != "" {
			break
		}
	}
	go io.Copy(io.Discard, out)
	addr := addrs[proto]
	if addr == "" {
		stop()
		return nil, fmt.Errorf("serve %s: no %s address", what, proto)
	}
	var s *tpService
	switch {
	case what == "afloat" && proto == "grpc":
		s, err = rlsService(addr)
		if err == nil {
			cc, c, _ := dialRLS(addr)
			err = waitRLS(ctx, c) // its first lease
			cc.Close()
		}
	case what == "afloat" && proto == "http":
		s = httpService(addr)
	default:
		err = errors.New("no client for it")
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("serve %s: %w", what, err)
	}
	inner := s.stop
	s.stop = func() { inner(); stop() }
	return s, nil
}

// rlsService is an RLS service at addr: every call the same request
// (rlsRequest), every answer decoded and its overall code checked.
func rlsService(addr string) (*tpService, error) {
	msg, err := proto.Marshal(rlsRequest())
	if err != nil {
		return nil, err
	}
	wire := loadgen.GRPC(addr, rlsv3.RateLimitService_ShouldRateLimit_FullMethodName, msg, func(b []byte) error {
		var resp rlsv3.RateLimitResponse
		if err := proto.Unmarshal(b, &resp); err != nil {
			return err
		}
		if resp.OverallCode == rlsv3.RateLimitResponse_UNKNOWN {
			return errors.New("overall code UNKNOWN")
		}
		return nil
	})
	return &tpService{addr: addr, wire: wire, stop: func() {}}, nil
}

// serveChild starts this program's "serve WHAT" on the service's core,
// with env added to its environment, and returns its standard output
// (where it prints its addresses) and a stop that closes its standard
// input (its signal to stop) and waits for it, killing it after 5 s.
func serveChild(what string, env ...string) (io.Reader, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command("taskset", "-c", serviceCPU, exe, "serve", what)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	stop := func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	return out, stop, nil
}

func startGubernatorSolo(ctx context.Context, behavior guber.Behavior) (*tpService, error) {
	out, stopProc, err := serveChild("gubernator")
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	addr := ""
	if sc.Scan() {
		addr, _ = strings.CutPrefix(sc.Text(), "grpc ")
	}
	go io.Copy(io.Discard, out)
	if addr == "" {
		stopProc()
		return nil, errors.New("serve gubernator: no address")
	}
	req := &guber.GetRateLimitsReq{Requests: []*guber.RateLimitReq{{
		Name: "bench", UniqueKey: tenantName, Hits: 1, Limit: 6000, Duration: 12 * guber.Second, Burst: 6000,
		Algorithm: guber.Algorithm_LEAKY_BUCKET, Behavior: behavior,
	}}}
	msg, err := proto.Marshal(req)
	if err != nil {
		stopProc()
		return nil, err
	}
	wire := loadgen.GRPC(addr, guber.V1_GetRateLimits_FullMethodName, msg, func(b []byte) error {
		var resp guber.GetRateLimitsResp
		if err := proto.Unmarshal(b, &resp); err != nil {
			return err
		}
		if len(resp.Responses) != 1 || resp.Responses[0].Error != "" {
			return fmt.Errorf("gubernator: %v", resp.Responses)
		}
		return nil
	})
	return &tpService{addr: addr, wire: wire, stop: stopProc}, nil
}

// httpService is afloat's decision API at addr: POST /v1/allow for the
// tenant, one token, on keep-alive connections.
func httpService(addr string) *tpService {
	body := `{"tenant":"` + tenantName + `","endpoint":"/","n":1}`
	req := []byte("POST /v1/allow HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	return &tpService{addr: addr, wire: loadgen.HTTP1(req), stop: func() {}}
}

// step is one rate of the search. Gaps and MaxGapMS are the generator's
// own stalls (its loop not running for over 0.5 ms); OwnP99MS, the p99 of
// how late its loop first saw each request due, the part of the latency
// no service caused; StealMS, CPU by CPU, the time the host ran something
// else while that CPU had work (the service is pinned to CPU 0, the
// generator to 1), which the generator's stalls cannot see for the
// service's core; Error, why a step failed.
type step struct {
	Rate      float64   `json:"rate"`
	Decisions int       `json:"decisions"`
	Failed    int64     `json:"failed"`
	P50MS     float64   `json:"p50_ms"`
	P99MS     float64   `json:"p99_ms"`
	ElapsedS  float64   `json:"elapsed_s"`
	Attempts  int       `json:"attempts,omitempty"`
	Gaps      int       `json:"generator_stalls,omitempty"`
	MaxGapMS  float64   `json:"generator_longest_stall_ms,omitempty"`
	OwnP99MS  float64   `json:"generator_own_p99_ms,omitempty"`
	StealMS   []float64 `json:"steal_ms,omitempty"`
	Error     string    `json:"error,omitempty"`
}

func (s step) pass(p99 time.Duration) bool {
	return s.Failed == 0 && s.P99MS <= p99.Seconds()*1e3 && float64(s.Decisions) >= 0.97*s.Rate*s.ElapsedS
}

// spinStep offers rate decisions a second for d with loadgen.Spin; a
// decision's latency runs from its scheduled time to its answer, so that
// a generator or service that falls behind shows as latency, not as a
// lower rate. A run Spin ends with an error (a call failed, or 5 s
// without an answer) is a failed step.
func spinStep(svc *tpService, rate float64, d time.Duration) step {
	r, err := loadgen.Spin(svc.addr, svc.wire, tpConns, rate, d)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	s := step{Rate: rate, Decisions: len(r.Sched), P50MS: ms(loadgen.Pct(r.Sched, 0.5)), P99MS: ms(loadgen.Pct(r.Sched, 0.99)),
		ElapsedS: r.Elapsed.Seconds(), Gaps: r.Gaps, MaxGapMS: ms(r.MaxGap), OwnP99MS: ms(loadgen.Pct(r.Own, 0.99))}
	for _, st := range r.Steal {
		s.StealMS = append(s.StealMS, ms(st))
	}
	if err != nil {
		s.Failed, s.Error = 1, err.Error()
	}
	return s
}

// quietStep is spinStep, run again while the generator stalled more than
// tpStallsPerS (up to tpAttempts in all); it keeps the attempt with the
// fewest stalls, and says how many it made.
func quietStep(svc *tpService, rate float64, d time.Duration) step {
	var best step
	for i := range tpAttempts {
		s := spinStep(svc, rate, d)
		if i == 0 || s.Gaps < best.Gaps {
			best = s
		}
		best.Attempts = i + 1
		if float64(s.Gaps) <= tpStallsPerS*d.Seconds() {
			break
		}
	}
	return best
}

// search starts the service, warms it, and raises the rate by tpGrowth
// from tpFirst until tpFailsEnd steps in a row are saturated (a p99
// tpSaturate times the target, a failed call, or too few answers); it
// returns the best step that passed (Rate 0 if none) and every step. It
// does not stop at the first step over the target: on the machines
// measured here a service idle between requests answers slower at a few
// hundred a second (each request wakes it) than at a few thousand.
func search(ctx context.Context, sys tpSystem, o tpOptions) (best step, steps []step, err error) {
	svc, err := sys.start(ctx)
	if err != nil {
		return step{}, nil, fmt.Errorf("%s: %w", sys.id, err)
	}
	defer svc.stop()
	if w := spinStep(svc, 1000, o.Step); w.Error != "" { // warm: caches, a lease
		return step{}, nil, fmt.Errorf("%s: warming: %s", sys.id, w.Error)
	}
	fails := 0
	for rate := tpFirst; rate <= o.MaxRate && fails < tpFailsEnd; rate *= tpGrowth {
		s := quietStep(svc, float64(int(rate)), o.Step)
		steps = append(steps, s)
		switch {
		case s.pass(o.P99):
			fails = 0
			if s.Rate > best.Rate {
				best = s
			}
		case s.Failed > 0 || s.P99MS > tpSaturate*o.P99.Seconds()*1e3 || float64(s.Decisions) < 0.97*s.Rate*s.ElapsedS:
			fails++
		default:
			fails = 0
		}
	}
	return best, steps, nil
}

type throughputJSON struct {
	TargetP99MS float64        `json:"target_p99_ms"`
	StepS       float64        `json:"step_s"`
	Reps        int            `json:"reps"`
	ServiceCPU  string         `json:"service_cpu"`
	GenCPU      string         `json:"generator_cpu"`
	LoadBefore  string         `json:"load_before"`
	LoadAfter   string         `json:"load_after"`
	Systems     []tpSystemJSON `json:"systems"`
}

type tpSystemJSON struct {
	ID            string  `json:"id"`
	DecisionsPerS float64 `json:"decisions_per_s"` // the median repetition's best passing rate
	P99MS         float64 `json:"p99_ms"`          // p99 at that rate
	Reps          []tpRep `json:"reps"`
}

type tpRep struct {
	DecisionsPerS float64 `json:"decisions_per_s"`
	P99MS         float64 `json:"p99_ms"`
	Steps         []step  `json:"steps"`
}

// throughput runs the search for every system, o.Reps times interleaved
// (every system once, then again), this process pinned to generatorCPU
// meanwhile (every thread: taskset -a).
func throughput(ctx context.Context, systems []tpSystem, o tpOptions) (*throughputJSON, error) {
	out := &throughputJSON{TargetP99MS: o.P99.Seconds() * 1e3, StepS: o.Step.Seconds(), Reps: o.Reps,
		ServiceCPU: serviceCPU, GenCPU: generatorCPU, LoadBefore: loadavg()}
	if runtime.NumCPU() < 2 {
		return nil, errors.New("throughput: needs 2 CPUs, one for the service and one for the generator")
	}
	pid := strconv.Itoa(os.Getpid())
	if b, err := exec.Command("taskset", "-a", "-p", "-c", generatorCPU, pid).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("throughput: taskset: %w: %s", err, b)
	}
	defer exec.Command("taskset", "-a", "-p", "-c", fmt.Sprintf("0-%d", runtime.NumCPU()-1), pid).Run()
	// One P: no other goroutine of this process runs on the generator's
	// core beside the spinning one (loadgen.Spin).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	reps := make([][]tpRep, len(systems))
	for range o.Reps {
		for i, sys := range systems {
			best, steps, err := search(ctx, sys, o)
			if err != nil {
				return nil, err
			}
			reps[i] = append(reps[i], tpRep{DecisionsPerS: best.Rate, P99MS: best.P99MS, Steps: steps})
		}
	}
	out.LoadAfter = loadavg()
	for i, sys := range systems {
		rs := slices.Clone(reps[i])
		slices.SortFunc(rs, func(a, b tpRep) int {
			switch {
			case a.DecisionsPerS < b.DecisionsPerS:
				return -1
			case a.DecisionsPerS > b.DecisionsPerS:
				return 1
			}
			return 0
		})
		med := rs[len(rs)/2]
		out.Systems = append(out.Systems, tpSystemJSON{ID: sys.id, DecisionsPerS: med.DecisionsPerS, P99MS: med.P99MS, Reps: reps[i]})
	}
	return out, nil
}

func printThroughput(w io.Writer, tp *throughputJSON) {
	fmt.Fprintf(w, "most decisions/s at p99 ≤ %g ms from the schedule (service on CPU %s, generator on CPU %s; %d repetitions of %gs steps; load %s → %s)\n",
		tp.TargetP99MS, tp.ServiceCPU, tp.GenCPU, tp.Reps, tp.StepS, tp.LoadBefore, tp.LoadAfter)
	for _, s := range tp.Systems {
		var each []string
		for _, r := range s.Reps {
			each = append(each, fmt.Sprintf("%.0f", r.DecisionsPerS))
		}
		fmt.Fprintf(w, "  %-20s %8.0f decisions/s (p99 %.3f ms; repetitions %s)\n", s.ID, s.DecisionsPerS, s.P99MS, strings.Join(each, ", "))
	}
	// Where no service holds the target — a machine whose every request
	// wakes an idle process, say — looser bounds read from the same steps
	// still order the services.
	fmt.Fprintf(w, "the same steps at looser bounds: median decisions/s (each repetition)\n  %-20s", "")
	for _, b := range looserP99MS {
		fmt.Fprintf(w, " %22s", fmt.Sprintf("p99 ≤ %g ms", b))
	}
	fmt.Fprintln(w)
	for _, s := range tp.Systems {
		fmt.Fprintf(w, "  %-20s", s.ID)
		for _, b := range looserP99MS {
			med, each := s.heldAt(b)
			fmt.Fprintf(w, " %22s", fmt.Sprintf("%.0f (%s)", med, each))
		}
		fmt.Fprintln(w)
	}
}

// looserP99MS are the bounds, in ms, printThroughput reads the steps at
// besides the target.
var looserP99MS = []float64{2, 5, 10, 50}

// heldAt is the highest rate each repetition held with p99 ≤ p99ms (no
// failure, ≥ 97 % answered), and their median.
func (s tpSystemJSON) heldAt(p99ms float64) (median float64, each string) {
	bound := time.Duration(p99ms * float64(time.Millisecond))
	var best []float64
	var out []string
	for _, r := range s.Reps {
		b := 0.0
		for _, st := range r.Steps {
			if st.pass(bound) {
				b = max(b, st.Rate)
			}
		}
		best = append(best, b)
		out = append(out, fmt.Sprintf("%.0f", b))
	}
	if len(best) == 0 {
		return 0, ""
	}
	sorted := slices.Clone(best)
	slices.Sort(sorted)
	return sorted[len(sorted)/2], strings.Join(out, "/")
}
