package bots

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

	_ "embed"

	"github.com/afloat/afloat/sim"
)

// The bots, by the names the CLI and the API take.
const (
	BotNothing   = "nothing"
	BotRunbook   = "runbook"
	BotExpert    = "expert"    // par: reacts to what the page shows (Expert)
	BotHindsight = "hindsight" // perfect foresight: searches with the seed's schedule (Hindsight)
)

// Names lists the bots in order: do nothing, follow the runbook, the
// expert (par), hindsight.
func Names() []string { return []string{BotNothing, BotRunbook, BotExpert, BotHindsight} }

// PlayBot plays the configuration (without actions) with the named bot.
func PlayBot(ctx context.Context, cfg sim.Config, bot string) (Run, error) {
	return playBot(ctx, cfg, bot, true)
}

// playBot is PlayBot that keeps the policy bots' frames only if keep (a
// sweep keeps scores); hindsight keeps its frames.
func playBot(ctx context.Context, cfg sim.Config, bot string, keep bool) (Run, error) {
	switch bot {
	case BotNothing:
		return play(ctx, cfg, Nothing, keep)
	case BotRunbook:
		return play(ctx, cfg, Runbook, keep)
	case BotExpert:
		return playExpert(ctx, cfg, Reactive, keep)
	case BotHindsight:
		return Hindsight(ctx, cfg)
	}
	return Run{}, &sim.ConfigError{Field: "bot", Msg: fmt.Sprintf("%q: want one of %s", bot, strings.Join(Names(), ", "))}
}

// Distribution is a bot's points over a range of seeds, noise on, at the
// scenario's own length: what a player's score is ranked against.
type Distribution struct {
	Scenario string    `json:"scenario"`
	Bot      string    `json:"bot"`
	First    uint32    `json:"first_seed"` // Points[i] is seed First+i
	Points   []float64 `json:"points"`     // rounded to 0.01
	Failed   []uint32  `json:"failed"`     // seeds whose run lost the month's budget
}

// Bounds of a sweep.
const (
	MaxSweepSeeds = 100_000 // seeds of one distribution, which is kept whole
	MaxWorkers    = 256
)

// checkSweep refuses a sweep Sweep cannot make, naming the field.
func checkSweep(scenario, bot string, first, last uint32, workers int) error {
	if _, err := sim.Lookup(scenario); err != nil {
		return err
	}
	if !slices.Contains(Names(), bot) {
		return &sim.ConfigError{Field: "bot", Msg: fmt.Sprintf("%q: want one of %s", bot, strings.Join(Names(), ", "))}
	}
	if last < first || last-first >= MaxSweepSeeds {
		return &sim.ConfigError{Field: "seeds", Msg: fmt.Sprintf("%d-%d: want first ≤ last, at most %d seeds", first, last, MaxSweepSeeds)}
	}
	if workers < 0 || workers > MaxWorkers {
		return &sim.ConfigError{Field: "workers", Msg: fmt.Sprintf("%d: want 0 (one per CPU) to %d", workers, MaxWorkers)}
	}
	return nil
}

// Sweep plays a bot on seeds first … last of a scenario (at most
// MaxSweepSeeds), noise on, at the scenario's length, on workers
// goroutines (0: GOMAXPROCS; at most MaxWorkers). It stops with ctx's
// error when ctx is done.
func Sweep(ctx context.Context, scenario, bot string, first, last uint32, workers int) (Distribution, error) {
	if err := checkSweep(scenario, bot, first, last, workers); err != nil {
		return Distribution{}, err
	}
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	n := int(last-first) + 1
	d := Distribution{Scenario: scenario, Bot: bot, First: first, Points: make([]float64, n)}
	failed := make([]bool, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r, err := playBot(ctx, sim.Config{Scenario: scenario, Seed: first + uint32(i), Noise: true}, bot, false)
				errs[i] = err
				d.Points[i] = math.Round(100*r.Score.Points) / 100
				failed[i] = r.Score.Failed
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Distribution{}, err
	}
	for i, err := range errs {
		if err != nil {
			return Distribution{}, err
		}
		if failed[i] {
			d.Failed = append(d.Failed, first+uint32(i))
		}
	}
	return d, nil
}

// Sweeps is Sweep of every bot on every scenario, scenario by scenario
// and bot by bot. It checks every sweep before it makes the first.
func Sweeps(ctx context.Context, scenarios, bots []string, first, last uint32, workers int) ([]Distribution, error) {
	for _, sc := range scenarios {
		for _, b := range bots {
			if err := checkSweep(sc, b, first, last, workers); err != nil {
				return nil, err
			}
		}
	}
	var ds []Distribution
	for _, sc := range scenarios {
		for _, b := range bots {
			d, err := Sweep(ctx, sc, b, first, last, workers)
			if err != nil {
				return nil, err
			}
			ds = append(ds, d)
		}
	}
	return ds, nil
}

// Percentile is the share of the distribution's runs, in percent, that
// scored more points (worse) than points, counting ties as half: 90 means
// better than nine runs in ten.
func (d Distribution) Percentile(points float64) float64 {
	if len(d.Points) == 0 {
		return math.NaN()
	}
	var worse, ties float64
	for _, p := range d.Points {
		switch {
		case p > points:
			worse++
		case p == points:
			ties++
		}
	}
	return 100 * (worse + ties/2) / float64(len(d.Points))
}

// Summary is a distribution in a few figures.
type Summary struct {
	Scenario string  `json:"scenario"`
	Bot      string  `json:"bot"`
	Runs     int     `json:"runs"`
	Mean     float64 `json:"mean"`
	Best     float64 `json:"best"`
	P10      float64 `json:"p10"`
	P50      float64 `json:"p50"`
	P90      float64 `json:"p90"`
	Worst    float64 `json:"worst"`
	Failed   int     `json:"failed"` // runs that lost the month's budget
}

// Summarize sums a distribution up.
func (d Distribution) Summarize() Summary {
	s := Summary{Scenario: d.Scenario, Bot: d.Bot, Runs: len(d.Points), Failed: len(d.Failed)}
	if len(d.Points) == 0 {
		return s
	}
	p := slices.Clone(d.Points)
	sort.Float64s(p)
	q := func(f float64) float64 { return p[int(math.Round(f*float64(len(p)-1)))] }
	for _, v := range p {
		s.Mean += v / float64(len(p))
	}
	s.Best, s.P10, s.P50, s.P90, s.Worst = p[0], q(0.1), q(0.5), q(0.9), p[len(p)-1]
	return s
}

// Summaries summarizes each distribution.
func Summaries(ds []Distribution) []Summary {
	sums := make([]Summary, len(ds))
	for i, d := range ds {
		sums[i] = d.Summarize()
	}
	return sums
}

// WriteTable prints summaries as the CLI shows them, one bot a line.
func WriteTable(w io.Writer, sums []Summary) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tbot\truns\tmean\tbest\tp10\tmedian\tp90\tworst\tfailed\t")
	for _, s := range sums {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t\n",
			s.Scenario, s.Bot, s.Runs, s.Mean, s.Best, s.P10, s.P50, s.P90, s.Worst, s.Failed)
	}
	return tw.Flush()
}

// Shipped distributions: every bot on seeds 1–1000 of every scenario,
// computed once (hindsight's search takes minutes) and embedded, so that
// a debrief ranks a player at once. Regenerate them after a change to the
// model, the score or a bot:
//
//	go run ./cmd/afloat sim bots --all --seeds 1-1000 --bots nothing,runbook,expert,hindsight --write sim/bots/distributions.json
//
// (TestShippedDistributionsAreCurrent replays a sample of seeds against
// them.)
//
//go:embed distributions.json
var shippedJSON []byte

// shippedFile is distributions.json.
type shippedFile struct {
	Comment       string         `json:"comment"`
	Distributions []Distribution `json:"distributions"`
}

var shipped = sync.OnceValues(func() (map[string]Distribution, error) {
	var f shippedFile
	if err := json.Unmarshal(shippedJSON, &f); err != nil {
		return nil, fmt.Errorf("bots: distributions.json: %w", err)
	}
	out := map[string]Distribution{}
	for _, d := range f.Distributions {
		out[d.Scenario+"/"+d.Bot] = d
	}
	return out, nil
})

// Shipped returns the embedded distribution of a bot on a scenario, seeds
// 1–1000, noise on, and whether there is one.
func Shipped(scenario, bot string) (Distribution, bool) {
	m, err := shipped()
	if err != nil {
		return Distribution{}, false
	}
	d, ok := m[scenario+"/"+bot]
	return d, ok
}

// ShippedOf returns the embedded distributions of the scenarios, every bot
// of each that has one, in order.
func ShippedOf(scenarios []string) ([]Distribution, error) {
	var ds []Distribution
	for _, sc := range scenarios {
		if _, err := sim.Lookup(sc); err != nil {
			return nil, err
		}
		for _, b := range Names() {
			if d, ok := Shipped(sc, b); ok {
				ds = append(ds, d)
			}
		}
	}
	return ds, nil
}

// WriteShipped writes distributions in the form of distributions.json.
func WriteShipped(w io.Writer, ds []Distribution) error {
	f := shippedFile{
		Comment:       "Each bot's points over seeds, noise on, at each scenario's length; written by: go run ./cmd/afloat sim bots --all --seeds 1-1000 --bots nothing,runbook,expert,hindsight --write sim/bots/distributions.json",
		Distributions: ds,
	}
	enc := json.NewEncoder(w)
	return enc.Encode(f)
}
