package web

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/afloat/afloat/bulkhead"
	"github.com/afloat/afloat/overload"
	"github.com/afloat/afloat/overload/live"
)

// lab serves the overload lab: the seed's experiment, computed in virtual
// time on demand and kept (it is deterministic), and the live HTTP
// comparison, one at a time, in the background.
//
// A comparison costs seconds of CPU and tens of megabytes, so it is
// guarded like the costly thing it is: POST only; one computation per
// profile and seed however many ask; at most maxComputing at once (more
// get 503 + Retry-After); and cancelled once nobody has asked for it for
// grace — a client that leaves, or a page that stops polling, stops it.
type lab struct {
	logger *slog.Logger

	mu        sync.Mutex
	results   map[string]*labCompare // by profile and seed: done, or being computed
	order     []string               // the done ones, oldest first; labKept kept
	computing int

	maxComputing int
	wait         time.Duration // how long a request waits before answering 202
	grace        time.Duration // how long a computation nobody waits for goes on
	runCompare   func(ctx context.Context, base overload.Config) ([]overload.Result, error)
	runVariants  func(ctx context.Context, base overload.Config) ([]overload.Result, error)

	live       liveState
	liveCancel context.CancelFunc
	runLive    func(context.Context, live.Config) (live.Report, error)

	stops []func() // the other labs' shutdowns (the assignment lab's)
}

// liveState is the live comparison as the page polls it.
type liveState struct {
	Running  bool   `json:"running"`
	Progress string `json:"progress"` // in English, for a log
	// Step is what it is doing, as data, for the page to say in its
	// user's language; nil before the first step and once it is over.
	Step     *live.Step   `json:"step,omitempty"`
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished"`
	Error    string       `json:"error,omitempty"`
	Report   *live.Report `json:"report,omitempty"`
}

// labPoint is one step of a run's series, summed (counts) or averaged
// (concurrency, queue, limit) over Step seconds, so a three-hour run draws
// in a few hundred points. Counts are per second; Work and Wasted are in
// requests' worth per second.
type labPoint struct {
	T        int     `json:"t"`
	Arrivals float64 `json:"arrivals"` // tries, retries included
	Retries  float64 `json:"retries"`
	// FirstTries are the clients' own demand, the article's blue curve:
	// the tries that are not retries.
	FirstTries     float64 `json:"first_tries"`
	Responses      float64 `json:"responses"` // in time
	Late           float64 `json:"late"`
	Timeouts       float64 `json:"timeouts"`
	Rejected       float64 `json:"rejected"`
	Departures     float64 `json:"departures"`
	Work           float64 `json:"work"`
	Wasted         float64 `json:"wasted"`
	Concurrency    float64 `json:"concurrency"`
	Queued         float64 `json:"queued"`
	Limit          float64 `json:"limit"`
	Worst          float64 `json:"worst_response"`
	Refused        float64 `json:"refused"`
	OtherArrivals  float64 `json:"other_arrivals"`
	OtherResponses float64 `json:"other_responses"`
	OtherErrors    float64 `json:"other_errors"`
}

type labRun struct {
	Run string `json:"run"` // the label, as the CLI prints it
	// Kind is "none", "bulkhead", "adaptive" or "threads", with the limits,
	// so that the page names the run in its own language.
	Kind    string           `json:"kind"`
	Inside  int              `json:"inside"`
	Outside int              `json:"outside"`
	Threads int              `json:"threads"`
	Summary overload.Summary `json:"summary"`
	Series  []labPoint       `json:"series"`
}

// labVariant is one of the runs that put afloat's hypothesis for the
// seed's death to the test (overload.Variants): no limit and no retries,
// on the linear server (Alpha 0) or the non-linear one.
type labVariant struct {
	Alpha   float64          `json:"alpha"`
	Summary overload.Summary `json:"summary"`
}

// labParams is what a comparison is computed from, its defaults filled in.
type labParams struct {
	Profile string  `json:"profile"`
	Seed    uint32  `json:"seed"`
	Inside  int     `json:"inside"`
	Outside int     `json:"outside"`
	Alpha   float64 `json:"alpha"`
	Retries int     `json:"retries"` // 0 for none
	// Patience is how long the most patient client waits, in seconds:
	// each gives up after a time drawn log-uniformly between the profile's
	// timeout and this; equal to the timeout, all alike.
	Patience float64 `json:"max_patience_s"`
}

func (p labParams) key() string {
	return fmt.Sprintf("%s/%d/%d/%d/%g/%d/%g", p.Profile, p.Seed, p.Inside, p.Outside, p.Alpha, p.Retries, p.Patience)
}

func (p labParams) config() (overload.Config, error) {
	retries, err := overload.ExactRetries(p.Retries)
	return overload.Config{Profile: p.Profile, Seed: p.Seed, Inside: p.Inside, Outside: p.Outside, Alpha: p.Alpha, Retries: retries, MaxPatience: p.Patience}, err
}

type labCompare struct {
	labParams
	Description string  `json:"description"`
	Timeout     float64 `json:"timeout_s"` // the clients': the least patient
	Step        int     `json:"step"`      // seconds per point
	Capacity    float64 `json:"capacity"`  // requests per second
	K           float64 `json:"k"`         // the knee: requests in work at full speed
	Work        float64 `json:"work_s"`
	Duration    float64 `json:"duration_s"`
	// The database scenario: the server's connections, the thread pool
	// compared, and the other service's timeout.
	Conns        int     `json:"conns,omitempty"`
	Threads      int     `json:"threads,omitempty"`
	OtherTimeout float64 `json:"other_timeout_s,omitempty"`
	// The largest peak, and the stretch after it that the summary's
	// "after the peak" figures cover; 0 for a profile without one.
	PeakStart float64  `json:"peak_start_s"`
	PeakEnd   float64  `json:"peak_end_s"`
	AfterEnd  float64  `json:"after_end_s"`
	Runs      []labRun `json:"runs"`
	// Variants are the hypothesis's runs, for a profile whose clients try
	// again (the World Cup); none for the others.
	Variants []labVariant `json:"variants"`

	key     string
	done    chan struct{} // closed when computed, failed or cancelled
	err     error
	cancel  context.CancelFunc
	waiters int         // requests waiting for it now
	idle    *time.Timer // cancels it after grace with no waiter
}

const (
	labKept         = 8               // comparisons kept once done
	labMaxComputing = 1               // computing at once
	labWait         = time.Second     // a request waits this long, then 202
	labGrace        = 5 * time.Second // a computation with no waiter goes on this long
)

func newLab(logger *slog.Logger) *lab {
	return &lab{
		logger: logger, results: map[string]*labCompare{}, runLive: live.Run, runCompare: overload.CompareContext,
		runVariants:  overload.VariantsContext,
		maxComputing: labMaxComputing, wait: labWait, grace: labGrace,
	}
}

// labMaxBody bounds the lab's request bodies, which are a few fields.
const labMaxBody = 4096

// compareExample is the body of POST /api/overload/compare, every field
// given; each may be left out for its default.
const compareExample = `{"profile": "worldcup", "seed": 1, "inside": 100, "outside": 100, "alpha": 0, "retries": 1, "max_patience_s": 1200}`

// labPatience is the range of a profile's max_patience_s: from its timeout
// (all clients alike) to overload.MaxSeconds, and its default.
type labPatience struct {
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Default float64 `json:"default"`
}

func patienceOf(p overload.Profile) labPatience {
	d := p.MaxPatience
	if d < p.Timeout {
		d = p.Timeout
	}
	return labPatience{Min: p.Timeout, Max: overload.MaxSeconds, Default: d}
}

// labPatienceRanges gives the page each profile's range, so that it can
// refuse a value in the user's language before sending it.
func labPatienceRanges() map[string]labPatience {
	out := map[string]labPatience{}
	for _, p := range overload.Profiles() {
		out[p.Name] = patienceOf(p)
	}
	return out
}

// decodeCompare reads a comparison's body: the profile (default worldcup),
// the seed (default 1), the limits compared (default the profile's), the
// server's slowdown (default 0, linear), the clients' retries (default
// the profile's; 0 for none) and how long the most patient waits (default
// the profile's).
func decodeCompare(body []byte) (compareBody, *apiError) {
	lp, p, aerr := decodeCompareFields(body)
	return compareBody{lp, p}, aerr
}

// compareBody is a decoded body of POST /api/overload/compare.
type compareBody struct {
	params  labParams
	profile overload.Profile
}

func decodeCompareFields(body []byte) (labParams, overload.Profile, *apiError) {
	f, aerr := decodeObject(body, compareExample, []string{"profile", "seed", "inside", "outside", "alpha", "retries", "max_patience_s"})
	if aerr != nil {
		return labParams{}, overload.Profile{}, aerr
	}
	name := "worldcup"
	if raw, ok := f["profile"]; ok && unmarshal(raw, &name) != nil {
		return labParams{}, overload.Profile{}, badRequest("profile", "profile %s: want a string, one of %s", clip(raw), strings.Join(overload.ProfileNames(), ", "))
	}
	p, err := overload.LookupProfile(name)
	if err != nil {
		return labParams{}, overload.Profile{}, badRequest("profile", "%v", err)
	}
	lp := labParams{Profile: p.Name}
	var seed, inside, outside, retries int64
	if seed, aerr = intField(f, "seed", 1, 0, math.MaxUint32); aerr != nil {
		return labParams{}, p, aerr
	}
	if inside, aerr = intField(f, "inside", int64(p.Inside), 1, bulkhead.MaxLimit); aerr != nil {
		return labParams{}, p, aerr
	}
	if outside, aerr = intField(f, "outside", int64(p.Outside), 1, bulkhead.MaxQueue); aerr != nil {
		return labParams{}, p, aerr
	}
	if retries, aerr = intField(f, "retries", int64(p.Retries), 0, overload.MaxRetries); aerr != nil {
		return labParams{}, p, aerr
	}
	lp.Seed, lp.Inside, lp.Outside, lp.Retries = uint32(seed), int(inside), int(outside), int(retries)
	if raw, ok := f["alpha"]; ok {
		if lp.Alpha, ok = number(raw); !ok || !(lp.Alpha >= 0 && lp.Alpha <= overload.MaxAlpha) {
			return labParams{}, p, badRequest("alpha", "alpha %s: want a number from 0 (linear) to %d", clip(raw), overload.MaxAlpha)
		}
	}
	r := patienceOf(p)
	lp.Patience = r.Default
	if raw, ok := f["max_patience_s"]; ok {
		if lp.Patience, ok = number(raw); !ok || !(lp.Patience >= r.Min && lp.Patience <= r.Max) {
			return labParams{}, p, badRequest("max_patience_s", "max_patience_s %s: want seconds from %g (the profile's timeout: all clients alike) to %g", clip(raw), r.Min, r.Max)
		}
	}
	return lp, p, nil
}

// number reads a JSON number; null, which encoding/json would take as
// "leave the default", is not one.
func number(raw json.RawMessage) (float64, bool) {
	var v float64
	if string(raw) == "null" || json.Unmarshal(raw, &v) != nil {
		return 0, false
	}
	return v, true
}

// compare answers POST /api/overload/compare (compareExample): the
// profile's comparison, or 202 {"computing": true} with Retry-After while
// it is being computed — ask again within the grace period, or the
// computation stops.
func (l *lab) compare(w http.ResponseWriter, r *http.Request, req compareBody) {
	lp, p := req.params, req.profile
	c, ok := l.join(p, lp)
	if !ok {
		w.Header().Set("Retry-After", "2")
		writeError(w, http.StatusServiceUnavailable, "", "another comparison is being computed (one at a time); try again in 2 s")
		return
	}
	wait := time.NewTimer(l.wait)
	defer wait.Stop()
	select {
	case <-c.done:
	case <-wait.C:
	case <-r.Context().Done():
	}
	l.leave(c)
	select {
	case <-c.done:
	default:
		if r.Context().Err() == nil {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusAccepted, map[string]any{"computing": true, "profile": p.Name, "seed": lp.Seed})
		}
		return
	}
	if c.err != nil {
		writeError(w, http.StatusServiceUnavailable, "", c.err.Error())
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// join returns the comparison of p and seed, done or being computed,
// starting it if it is neither and there is room, and counts the caller
// among its waiters (leave uncounts it).
func (l *lab) join(p overload.Profile, lp labParams) (*labCompare, bool) {
	key := lp.key()
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.results[key]
	if !ok {
		if l.computing >= l.maxComputing {
			return nil, false
		}
		ctx, cancel := context.WithCancel(context.Background())
		c = &labCompare{key: key, done: make(chan struct{}), cancel: cancel}
		l.results[key] = c
		l.computing++
		go l.compute(ctx, c, p, lp) // one computation per key, however many ask
	}
	c.waiters++
	if c.idle != nil {
		c.idle.Stop()
		c.idle = nil
	}
	return c, true
}

// leave uncounts a waiter; the last one to leave a computation still
// running starts the grace period after which it is cancelled.
func (l *lab) leave(c *labCompare) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c.waiters--
	select {
	case <-c.done:
		return
	default:
	}
	if c.waiters == 0 && c.idle == nil {
		c.idle = time.AfterFunc(l.grace, func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if c.waiters == 0 && l.results[c.key] == c {
				delete(l.results, c.key) // the next ask starts afresh
				c.cancel()
			}
		})
	}
}

func (l *lab) compute(ctx context.Context, c *labCompare, p overload.Profile, lp labParams) {
	cfg, err := lp.config()
	var runs, variants []overload.Result
	if err == nil {
		runs, err = l.runCompare(ctx, cfg)
	}
	if err == nil {
		variants, err = l.runVariants(ctx, cfg)
	}
	c.labParams, c.Description = lp, p.Description
	c.Timeout, c.Capacity, c.K, c.Work, c.Duration = p.Timeout, p.K/p.Work, p.K, p.Work, p.Duration
	c.Conns, c.Threads, c.OtherTimeout = p.Conns, p.Threads, p.OtherTimeout
	c.PeakStart, c.PeakEnd, c.AfterEnd = p.PeakStart, p.PeakEnd, p.AfterEnd
	c.Step = max(1, int(math.Ceil(p.Duration/720)))
	for _, r := range runs {
		run := labRun{Run: r.Summary.Run, Kind: "bulkhead", Inside: r.Config.Inside, Outside: r.Config.Outside, Threads: r.Config.Threads,
			Summary: r.Summary, Series: downsample(r.Series, c.Step)}
		switch {
		case r.Config.Threads > 0:
			run.Kind = "threads"
		case r.Config.Inside == 0:
			run.Kind = "none"
		case r.Config.Adaptive:
			run.Kind = "adaptive"
		}
		c.Runs = append(c.Runs, run)
	}
	c.Variants = []labVariant{}
	for _, r := range variants {
		c.Variants = append(c.Variants, labVariant{Alpha: r.Config.Alpha, Summary: r.Summary})
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	c.cancel()
	l.computing--
	c.err = err
	switch {
	case err != nil:
		if l.results[c.key] == c {
			delete(l.results, c.key) // not kept: the next ask tries again
		}
		if ctx.Err() == nil {
			l.logger.Warn("overload comparison failed", "comparison", lp.key(), "err", err)
		}
	default:
		l.order = append(l.order, c.key)
		if len(l.order) > labKept {
			delete(l.results, l.order[0])
			l.order = l.order[1:]
		}
	}
	close(c.done)
}

// downsample sums counts into per-second rates and averages levels over
// step seconds.
func downsample(series []overload.Second, step int) []labPoint {
	var out []labPoint
	for i := 0; i < len(series); i += step {
		chunk := series[i:min(i+step, len(series))]
		n := float64(len(chunk))
		p := labPoint{T: chunk[0].T}
		for _, s := range chunk {
			p.Arrivals += float64(s.Arrivals) / n
			p.Retries += float64(s.Retries) / n
			p.FirstTries += float64(s.Arrivals-s.Retries) / n
			p.Responses += float64(s.Responses) / n
			p.Late += float64(s.Late) / n
			p.Timeouts += float64(s.Timeouts) / n
			p.Rejected += float64(s.Rejected) / n
			p.Departures += float64(s.Departures) / n
			p.Work += s.Work / n
			p.Wasted += s.Wasted / n
			p.Concurrency += float64(s.Concurrency) / n
			p.Queued += float64(s.Queued) / n
			p.Limit += s.Limit / n
			p.Worst = math.Max(p.Worst, s.Worst)
			p.Refused += float64(s.Refused) / n
			p.OtherArrivals += float64(s.OtherArrivals) / n
			p.OtherResponses += float64(s.OtherResponses) / n
			p.OtherErrors += float64(s.OtherErrors) / n
		}
		// The last second of the chunk, not the mean: the cumulative chart
		// draws arrivals minus departures against it.
		p.Concurrency, p.Queued = float64(chunk[len(chunk)-1].Concurrency), float64(chunk[len(chunk)-1].Queued)
		out = append(out, p)
	}
	return out
}

// game answers GET /api/overload/game?game=game1&periods=12: one of the
// seed's games in whole periods, the grid the page animates.
func (l *lab) game(w http.ResponseWriter, r *http.Request) {
	q, aerr := parseQuery(r.URL.RawQuery)
	if aerr != nil {
		aerr.write(w)
		return
	}
	for key := range q {
		if key != "game" && key != "periods" {
			writeError(w, http.StatusBadRequest, clipKey(key), fmt.Sprintf("unknown parameter %q: this endpoint takes game, periods", clip([]byte(key))))
			return
		}
	}
	name, periods := "game1", int64(12)
	if v, ok := q["game"]; ok {
		name = v[0]
	}
	if v, ok := q["periods"]; ok {
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil || n < 1 || n > overload.MaxPeriods {
			writeError(w, http.StatusBadRequest, "periods", fmt.Sprintf("periods %q: want an integer from 1 to %d", clip([]byte(v[0])), overload.MaxPeriods))
			return
		}
		periods = n
	}
	g, err := overload.PlayGame(name, int(periods))
	if err != nil {
		writeError(w, http.StatusBadRequest, "game", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, g)
}

// liveGet answers GET /api/overload/live: the state of the live
// comparison.
func (l *lab) liveGet(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	st := l.live
	l.mu.Unlock()
	writeJSON(w, http.StatusOK, st)
}

// decodeEmpty reads {}, the body of a request that takes no parameters.
func decodeEmpty(body []byte) (struct{}, *apiError) {
	_, aerr := decodeObject(body, "{}", []string{})
	return struct{}{}, aerr
}

// liveStart answers POST /api/overload/live {}: start the live comparison
// (the short phases, about a minute) unless one runs already.
func (l *lab) liveStart(w http.ResponseWriter, r *http.Request, _ struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live.Running {
		writeError(w, http.StatusConflict, "", "a live comparison is already running; GET /api/overload/live follows it")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	l.liveCancel = cancel
	l.live = liveState{Running: true, Progress: "starting", Started: time.Now()}
	go func() {
		defer cancel()
		rep, err := l.runLive(ctx, live.Config{
			Phases: live.ShortPhases,
			Progress: func(s string) {
				l.mu.Lock()
				l.live.Progress = s
				l.mu.Unlock()
			},
			Step: func(s live.Step) {
				l.mu.Lock()
				l.live.Step = &s
				l.mu.Unlock()
			},
		})
		l.mu.Lock()
		defer l.mu.Unlock()
		l.live.Running, l.live.Finished, l.live.Progress, l.live.Step = false, time.Now(), "done", nil
		if err != nil {
			l.live.Error = err.Error()
			l.logger.Warn("live comparison failed", "err", err)
			return
		}
		l.live.Report = &rep
	}()
	writeJSON(w, http.StatusAccepted, l.live)
}

// stop ends a live comparison and the comparisons in progress, and the
// other labs, on shutdown.
func (l *lab) stop() {
	l.mu.Lock()
	if l.liveCancel != nil {
		l.liveCancel()
	}
	for _, c := range l.results {
		c.cancel()
	}
	stops := l.stops
	l.mu.Unlock()
	for _, f := range stops {
		f()
	}
}
