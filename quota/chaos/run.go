package chaos

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/eventlog"
)

// Summary is a run's outcome: what the checker found, and what was
// offered and admitted.
type Summary struct {
	Seed     uint32        `json:"seed"`
	Mode     string        `json:"mode"`
	Faults   string        `json:"faults"`
	Duration time.Duration `json:"duration_ns"`
	eventlog.Report
	Offered map[string]int64 `json:"offered"` // tokens, by region
	Admits  map[string]int64 `json:"admits"`  // tokens, by region
	Outages int              `json:"outages"`
	Cuts    int              `json:"partitions"`
	Epochs  int              `json:"epochs"`
	Bound   float64          `json:"bound_excess"` // the excess the mode allows: 0, or regions·E
	// Refused counts ledger writes refused other than for a stale epoch
	// (only a broken run has any).
	Refused  int  `json:"refused_writes,omitempty"`
	Replayed bool `json:"-"`
}

// OK says whether the run kept every promise.
func (s Summary) OK() bool { return s.Violations == 0 }

// Run runs one seed and checks it.
func Run(cfg Config) (Summary, error) { return run(cfg, faults{}) }

// run is Run with the deliberate faults of broken planted (none but in a
// build with the tag mutation: faults.go).
func run(cfg Config, broken faults) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	cfg = cfg.withDefaults()
	sch := cfg.Schedule
	if sch == nil {
		sch = Draw(cfg)
	}
	chk := eventlog.NewChecker()
	var out eventlog.Writer = chk
	if cfg.Log != nil {
		out = eventlog.Tee{cfg.Log, chk}
	}
	s, err := newSim(cfg, sch, out, broken)
	if err != nil {
		return Summary{}, err
	}
	if err := s.run(); err != nil {
		return Summary{}, fmt.Errorf("chaos: seed %d: %w", cfg.Seed, err)
	}
	sum := Summary{
		Seed: cfg.Seed, Mode: cfg.Mode.String(), Faults: cfg.Faults.String(), Duration: cfg.Duration,
		Report:  chk.Finish(s.end),
		Offered: map[string]int64{}, Admits: map[string]int64{},
		Outages: len(sch.Outages), Cuts: len(sch.Partitions), Epochs: len(s.coords),
		Bound:   float64(len(cfg.Tenant.Regions)) * cfg.Tenant.Emergency.Float(),
		Refused: s.refused,
	}
	for _, r := range s.regions {
		sum.Offered[r.name] += r.offers // a Duplicate region's two agents together
		sum.Admits[r.name] += r.admits
	}
	return sum, nil
}

// Many is the outcome of many seeds.
type Many struct {
	Seeds      int       `json:"seeds"`
	Failed     int       `json:"failed"`     // seeds with a violation
	Violations int       `json:"violations"` // in all
	Worst      Summary   `json:"worst"`      // the seed with the largest excess (a failed one first)
	Failures   []uint32  `json:"failed_seeds,omitempty"`
	Elapsed    float64   `json:"elapsed_s"`
	Excesses   []float64 `json:"-"`
}

// Bounds of RunMany.
const (
	MaxSeeds   = 10_000_000
	MaxWorkers = 256
)

// RunMany runs seeds from to to (inclusive, at most MaxSeeds) on workers
// goroutines (0: one per CPU; at most MaxWorkers) and reports the worst.
// Logs are not written. A range or configuration it cannot run is
// quota.ErrConfig, before any seed runs.
func RunMany(cfg Config, from, to uint32, workers int) (Many, error) {
	if to < from || to-from >= MaxSeeds {
		return Many{}, fmt.Errorf("%w: seeds %d-%d: want the first no larger than the last, at most %d seeds", quota.ErrConfig, from, to, MaxSeeds)
	}
	if workers < 0 || workers > MaxWorkers {
		return Many{}, fmt.Errorf("%w: workers %d: want 0 (one per CPU) to %d", quota.ErrConfig, workers, MaxWorkers)
	}
	if err := cfg.Validate(); err != nil {
		return Many{}, err
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	cfg.Log = nil
	start := time.Now()
	seeds := make(chan uint32)
	type result struct {
		s   Summary
		err error
	}
	results := make(chan result)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for seed := range seeds {
				c := cfg
				c.Seed = seed
				s, err := Run(c)
				results <- result{s, err}
			}
		})
	}
	go func() {
		for seed := uint64(from); seed <= uint64(to); seed++ {
			seeds <- uint32(seed)
		}
		close(seeds)
		wg.Wait()
		close(results)
	}()
	var m Many
	var firstErr error
	worse := func(a, b Summary) bool { // a worse than b
		if a.OK() != b.OK() {
			return !a.OK()
		}
		return cmp.Or(cmp.Compare(a.WorstExcess, b.WorstExcess), cmp.Compare(b.Seed, a.Seed)) > 0
	}
	for r := range results {
		if r.err != nil {
			if firstErr == nil {
				firstErr = r.err
			}
			continue
		}
		m.Seeds++
		m.Violations += r.s.Violations
		m.Excesses = append(m.Excesses, r.s.WorstExcess)
		if !r.s.OK() {
			m.Failed++
			m.Failures = append(m.Failures, r.s.Seed)
		}
		if m.Seeds == 1 || worse(r.s, m.Worst) {
			m.Worst = r.s
		}
	}
	slices.Sort(m.Failures)
	m.Elapsed = time.Since(start).Seconds()
	return m, firstErr
}
