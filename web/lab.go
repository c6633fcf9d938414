package web

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

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
	runCompare   func(ctx context.Context, profile string, seed uint32) ([]overload.Result, error)

	live       liveState
	liveCancel context.CancelFunc
	runLive    func(context.Context, live.Config) (live.Report, error)

	stops []func() // the other labs' shutdowns (the assignment lab's)
}

// liveState is the live comparison as the page polls it.
type liveState struct {
	Running  bool         `json:"running"`
	Progress string       `json:"progress"`
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished"`
	Error    string       `json:"error,omitempty"`
	Report   *live.Report `json:"report,omitempty"`
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
		maxComputing: labMaxComputing, wait: labWait, grace: labGrace,
	}
}

// compare answers POST /api/overload/compare {"profile": "worldcup",
// "seed": 1}: the five runs, or 202 {"computing": true} with Retry-After
// while they are being computed — ask again within the grace period, or
// the computation stops.
func (l *lab) compare(w http.ResponseWriter, r *http.Request) {
	body, aerr := readBody(r, 4096)
	if aerr != nil {
		aerr.write(w)
		return
	}
	f, aerr := decodeObject(body, `{"profile": "worldcup", "seed": 1}`, []string{"profile", "seed"})
	if aerr != nil {
		aerr.write(w)
		return
	}
	name := "worldcup"
	if raw, ok := f["profile"]; ok && json.Unmarshal(raw, &name) != nil {
		writeError(w, http.StatusBadRequest, "profile", "profile "+clip(raw)+": want a string, one of "+strings.Join(overload.ProfileNames(), ", "))
		return
	}
	p, err := overload.LookupProfile(name)
	if err != nil {
		writeError(w, http.StatusBadRequest, "profile", err.Error())
		return
	}
	seed, aerr := intField(f, "seed", 1, 0, math.MaxUint32)
	if aerr != nil {
		aerr.write(w)
		return
	}
	c, ok := l.join(p, uint32(seed))
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
			writeJSON(w, http.StatusAccepted, map[string]any{"computing": true, "profile": p.Name, "seed": seed})
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
func (l *lab) join(p overload.Profile, seed uint32) (*labCompare, bool) {
	key := p.Name + "/" + strconv.FormatUint(uint64(seed), 10)
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
		go l.compute(ctx, c, p, seed) // one computation per key, however many ask
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

func (l *lab) compute(ctx context.Context, c *labCompare, p overload.Profile, seed uint32) {
	runs, err := l.runCompare(ctx, p.Name, seed)
	c.Profile, c.Description, c.Seed = p.Name, p.Description, seed
	c.Capacity, c.Work = p.K/p.Work, p.Work
	c.Step = max(1, int(math.Ceil(p.Duration/720)))
	for _, r := range runs {
		c.Runs = append(c.Runs, labRun{Run: r.Summary.Run, Summary: r.Summary, Series: downsample(r.Series, c.Step)})
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
			l.logger.Warn("overload comparison failed", "profile", p.Name, "seed", seed, "err", err)
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

// liveStart answers POST /api/overload/live {}: start the live comparison
// (the short phases, about a minute) unless one runs already.
func (l *lab) liveStart(w http.ResponseWriter, r *http.Request) {
	body, aerr := readBody(r, 4096)
	if aerr == nil {
		_, aerr = decodeObject(body, "{}", []string{})
	}
	if aerr != nil {
		aerr.write(w)
		return
	}
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
