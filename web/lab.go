package web

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/afloat/afloat/overload"
)

// lab serves the overload lab: the seed's experiment, computed in virtual
// time on demand and kept (it is deterministic), and the live HTTP
// comparison, one at a time, in the background.
type lab struct {
	logger *slog.Logger

	mu      sync.Mutex
	results map[string]*labCompare // by profile and seed; a handful kept
	order   []string

	wait       time.Duration // how long compare waits before answering 202
	runCompare func(profile string, seed uint32) ([]overload.Result, error)

	live       liveState
	liveCancel context.CancelFunc
	runLive    func(context.Context, overload.LiveConfig) (overload.LiveReport, error)

	stops []func() // the other labs' shutdowns (the assignment lab's)
}

// liveState is the live comparison as the page polls it.
type liveState struct {
	Running  bool                 `json:"running"`
	Progress string               `json:"progress"`
	Started  time.Time            `json:"started"`
	Finished time.Time            `json:"finished"`
	Error    string               `json:"error,omitempty"`
	Report   *overload.LiveReport `json:"report,omitempty"`
}

// labPoint is one step of a run's series, summed (counts) or averaged
// (concurrency, queue, limit) over Step seconds, so a three-hour run draws
// in a few hundred points.
type labPoint struct {
	T           int     `json:"t"`
	Arrivals    float64 `json:"arrivals"` // per second
	Responses   float64 `json:"responses"`
	Timeouts    float64 `json:"timeouts"`
	Wasted      float64 `json:"wasted"`
	Rejected    float64 `json:"rejected"`
	Concurrency float64 `json:"concurrency"`
	Queued      float64 `json:"queued"`
	Limit       float64 `json:"limit"`
	Worst       float64 `json:"worst_response"`
}

type labRun struct {
	Run     string           `json:"run"`
	Summary overload.Summary `json:"summary"`
	Series  []labPoint       `json:"series"`
}

type labCompare struct {
	Profile     string   `json:"profile"`
	Description string   `json:"description"`
	Seed        uint32   `json:"seed"`
	Step        int      `json:"step"` // seconds per point
	Capacity    float64  `json:"capacity"`
	Work        float64  `json:"work_s"`
	Runs        []labRun `json:"runs"`

	done chan struct{} // closed when computed
	err  error
}

const labKept = 8

func newLab(logger *slog.Logger) *lab {
	return &lab{logger: logger, results: map[string]*labCompare{}, runLive: overload.RunLive, wait: 10 * time.Second, runCompare: overload.Compare}
}

// compare answers GET /api/overload/compare?profile=worldcup&seed=1: the
// five runs, or 202 {"computing": true} with Retry-After while they are
// being computed.
func (l *lab) compare(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for key, vs := range q {
		if key != "profile" && key != "seed" {
			writeError(w, http.StatusBadRequest, key, "unknown parameter "+strconv.Quote(key)+": this endpoint takes profile, seed")
			return
		}
		if len(vs) > 1 {
			writeError(w, http.StatusBadRequest, key, key+" given more than once")
			return
		}
	}
	name := q.Get("profile")
	if name == "" {
		name = "worldcup"
	}
	p, err := overload.LookupProfile(name)
	if err != nil {
		writeError(w, http.StatusBadRequest, "profile", err.Error())
		return
	}
	seed := uint64(1)
	if s := q.Get("seed"); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 32); err != nil {
			writeError(w, http.StatusBadRequest, "seed", "seed "+strconv.Quote(s)+": want an integer from 0 to 4294967295")
			return
		}
	}
	key := p.Name + "/" + strconv.FormatUint(seed, 10)

	l.mu.Lock()
	c, ok := l.results[key]
	if !ok {
		c = &labCompare{done: make(chan struct{})}
		l.results[key] = c
		l.order = append(l.order, key)
		if len(l.order) > labKept {
			delete(l.results, l.order[0])
			l.order = l.order[1:]
		}
		go l.compute(c, p, uint32(seed)) // one computation per key, however many ask
	}
	l.mu.Unlock()

	// A comparison takes a few seconds (far more on a loaded machine or
	// under the race detector); rather than hold the connection past the
	// server's write timeout, answer 202 after a while and let the client
	// ask again: the computation goes on, shared by every asker.
	wait := time.NewTimer(l.wait)
	defer wait.Stop()
	select {
	case <-c.done:
	case <-wait.C:
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusAccepted, map[string]any{"computing": true, "profile": p.Name, "seed": seed})
		return
	case <-r.Context().Done():
		return
	}
	if c.err != nil {
		writeError(w, http.StatusInternalServerError, "", c.err.Error())
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (l *lab) compute(c *labCompare, p overload.Profile, seed uint32) {
	defer close(c.done)
	runs, err := l.runCompare(p.Name, seed)
	if err != nil {
		c.err = err
		return
	}
	c.Profile, c.Description, c.Seed = p.Name, p.Description, seed
	c.Capacity, c.Work = p.K/p.Work, p.Work
	c.Step = max(1, int(math.Ceil(p.Duration/720)))
	for _, r := range runs {
		c.Runs = append(c.Runs, labRun{Run: r.Summary.Run, Summary: r.Summary, Series: downsample(r.Series, c.Step)})
	}
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
			p.Responses += float64(s.Responses) / n
			p.Timeouts += float64(s.Timeouts) / n
			p.Wasted += float64(s.Wasted) / n
			p.Rejected += float64(s.Rejected) / n
			p.Concurrency += float64(s.Concurrency) / n
			p.Queued += float64(s.Queued) / n
			p.Limit += s.Limit / n
			p.Worst = math.Max(p.Worst, s.Worst)
		}
		out = append(out, p)
	}
	return out
}

// liveGet answers GET /api/overload/live: the state of the live
// comparison.
func (l *lab) liveGet(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	st := l.live
	l.mu.Unlock()
	writeJSON(w, http.StatusOK, st)
}

// liveStart answers POST /api/overload/live: start the live comparison
// (the short phases, about a minute) unless one runs already.
func (l *lab) liveStart(w http.ResponseWriter, r *http.Request) {
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
		rep, err := l.runLive(ctx, overload.LiveConfig{
			Phases: overload.ShortPhases,
			Progress: func(s string) {
				l.mu.Lock()
				l.live.Progress = s
				l.mu.Unlock()
			},
		})
		l.mu.Lock()
		defer l.mu.Unlock()
		l.live.Running, l.live.Finished, l.live.Progress = false, time.Now(), "done"
		if err != nil {
			l.live.Error = err.Error()
			l.logger.Warn("live comparison failed", "err", err)
			return
		}
		l.live.Report = &rep
	}()
	writeJSON(w, http.StatusAccepted, l.live)
}

// stop ends a live comparison in progress, and the other labs, on
// shutdown.
func (l *lab) stop() {
	l.mu.Lock()
	if l.liveCancel != nil {
		l.liveCancel()
	}
	stops := l.stops
	l.mu.Unlock()
	for _, f := range stops {
		f()
	}
}
