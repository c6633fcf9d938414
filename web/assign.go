package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/afloat/afloat/assign"
	"github.com/afloat/afloat/internal/redact"
	"github.com/afloat/afloat/internal/redisurl"
)

// assignLab serves the least-used assignment page: a pool on Redis, its
// counts live, picks by hand or as a steady load, and remove/restore under
// a policy. With no Redis URL it runs on an in-process Redis-compatible
// server (miniredis), and says so on the page: the demo shows the
// technique, not Redis's performance or behaviour under failure.
type assignLab struct {
	logger   *slog.Logger
	redisURL string
	poolName string
	maxBody  int64
	now      func() time.Time
	// writeAny lets the lab change a pool it did not create (the
	// operator's --assign-write); otherwise a pool that existed before
	// the console started is shown, never changed.
	writeAny bool

	// Connected on first use, and again on the next use after a failure:
	// a Redis that is down when the page is first opened is used once it
	// is up, without restarting the console.
	startMu sync.Mutex
	demo    bool
	mini    *miniredis.Miniredis
	client  rueidis.Client // closed with the lab
	pool    *assign.Pool

	mu         sync.Mutex
	samples    []totalSample // (time, total count), for picks per second
	loadRate   int
	loadUntil  time.Time
	loadCancel context.CancelFunc
	loadDone   chan struct{}
	// llm is the LLM demo's state while it is on (POST /api/assign/llm):
	// the pool is API keys with per-key limits, and one of them answers
	// every llmFailEvery-th request through it with 429 and Retry-After.
	llm *llmDemo
}

// llmDemo simulates the upstream of a pool of API keys: calls counts the
// requests each key has served since the demo started, and the failing
// key's every llmFailEvery-th answers 429 — a pure function of the count,
// so that a run of the demo is the same every time.
type llmDemo struct {
	calls map[string]int
}

// The LLM demo: four API keys, each limited to llmRPM requests a minute in
// bursts of llmBurst, and llmFailingKey answering 429 with a Retry-After
// of llmRetryAfter to every llmFailEvery-th request.
const (
	llmKeys       = 4
	llmRPM        = 20
	llmBurst      = 5
	llmFailingKey = "key-3"
	llmFailEvery  = 3
	llmRetryAfter = 30 * time.Second
)

func llmKeyNames() []string {
	out := make([]string, llmKeys)
	for i := range out {
		out[i] = fmt.Sprintf("key-%d", i+1)
	}
	return out
}

type totalSample struct {
	at    time.Time
	total int64
}

// Limits of the page's requests.
const (
	assignMaxPick     = 1000
	assignMaxRate     = 5000
	assignLoadFor     = 2 * time.Minute // a load stops by itself after this
	assignMinMembers  = 2
	assignMaxMembers  = 50
	assignDemoMembers = 8
	// assignMaxCoolFor is the longest cooldown (and lease) the page asks
	// for.
	assignMaxCoolFor = 3600
	// assignMaxCap is the largest concurrency cap the page sets.
	assignMaxCap = 100
)

func newAssignLab(logger *slog.Logger, redisURL, poolName string, writeAny bool, maxBody int64) *assignLab {
	if poolName == "" {
		poolName = "afloat-console"
	}
	return &assignLab{logger: logger, redisURL: redisURL, poolName: poolName, writeAny: writeAny, maxBody: maxBody, now: time.Now}
}

// assignOwner is the creator the lab records on the pool it makes
// (assign.Pool.Create: the key afloat:assign:{pool}:owner). A pool with
// this creator is the lab's — made by this console or an earlier run of
// it on the same Redis; any other pool, or one holding only failure
// records, is not, and the lab never creates over it or resets it.
const assignOwner = "afloat console assignment lab"

// start connects on first use, so that a console nobody opens this page
// of starts no server and makes no connection. A failure is not kept: the
// next use tries again. It sends nothing to Redis but the connection's
// handshake: reading the pool is state's, creating it create's.
func (a *assignLab) start() error {
	a.startMu.Lock()
	defer a.startMu.Unlock()
	if a.pool != nil {
		return nil
	}
	url := a.redisURL
	if url == "" {
		if a.mini == nil {
			m, err := miniredis.Run()
			if err != nil {
				return fmt.Errorf("web: starting the in-process demo server: %w", err)
			}
			a.mini, a.demo = m, true
		}
		url = "redis://" + a.mini.Addr()
	}
	rc, err := redisurl.Dial(url, assign.ErrInvalid)
	if err != nil {
		return err
	}
	c, err := assign.FromRueidis(rc)
	var p *assign.Pool
	if err == nil {
		p, err = assign.New(c, a.poolName)
	}
	if err != nil {
		rc.Close()
		return err
	}
	a.client, a.pool = rc, p
	return nil
}

// demoMembers names the members of a pool the lab makes.
func demoMembers(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("proxy-%02d", i+1)
	}
	return names
}

// create makes the pool with n members at zero if nothing of it is on the
// Redis, and reports whether it did.
func (a *assignLab) create(ctx context.Context, n int) (bool, error) {
	ok, err := a.pool.Create(ctx, assignOwner, 0, demoMembers(n)...)
	if ok {
		a.mu.Lock()
		a.samples = nil
		a.mu.Unlock()
	}
	return ok, err
}

// reset empties the lab's own pool and refills it with n members at zero;
// any other pool it leaves alone (assign.ErrNotOwner).
func (a *assignLab) reset(ctx context.Context, n int) error {
	if err := a.pool.Reset(ctx, assignOwner, 0, demoMembers(n)...); err != nil {
		return err
	}
	a.mu.Lock()
	a.samples, a.llm = nil, nil
	a.mu.Unlock()
	return nil
}

func (a *assignLab) stop() {
	a.stopLoad()
	a.startMu.Lock()
	defer a.startMu.Unlock()
	if a.client != nil {
		a.client.Close()
	}
	if a.mini != nil {
		a.mini.Close()
	}
}

// assignState is the page's view of the pool.
type assignState struct {
	Demo bool `json:"demo"`
	// Exists says whether the pool has members on the Redis; the page
	// asks POST /api/assign/create for one that does not.
	Exists bool `json:"exists"`
	// Owned says whether the lab created the pool (its creator is
	// assignOwner).
	Owned bool `json:"owned"`
	// Writable says whether the page may change the pool: it exists, and
	// the lab created it or the operator allowed it (serve
	// --assign-write).
	Writable      bool            `json:"writable"`
	Server        string          `json:"server"`
	Pool          string          `json:"pool"`
	Members       []assign.Member `json:"members"`
	Total         int64           `json:"total"`  // assignments of every member
	Spread        int64           `json:"spread"` // max − min of the active members
	PicksPerS     float64         `json:"picks_per_s"`
	ScriptReloads int64           `json:"script_reloads"`
	Load          assignLoad      `json:"load"`
	// Now is Redis's clock when the pool was read: a member's
	// cooling_until is on it, not on the browser's.
	Now time.Time `json:"now"`
	// LastResort is what a pick does when every member is cooling: fail
	// or earliest.
	LastResort assign.LastResort `json:"last_resort"`
	LLM        *assignLLM        `json:"llm,omitempty"` // while the LLM demo is on
	// Leases are the leases open (POST /api/assign/acquire), the first to
	// end first (up to assign.StatusLeases); OpenLeases counts them all.
	Leases     []assign.Lease `json:"leases"`
	OpenLeases int            `json:"open_leases"`
}

// assignLLM describes the LLM demo to the page.
type assignLLM struct {
	FailingKey  string `json:"failing_key"`
	FailEvery   int    `json:"fail_every"`
	RetryAfterS int    `json:"retry_after_s"`
	RPM         int    `json:"rpm"`
	Burst       int    `json:"burst"`
	Answered429 int    `json:"answered_429"` // 429s the failing key has answered
}

type assignLoad struct {
	Rate        int  `json:"rate"` // picks per second, 0 when stopped
	Running     bool `json:"running"`
	SecondsLeft int  `json:"seconds_left"`
}

// state reads the pool; it writes nothing to Redis.
func (a *assignLab) state(ctx context.Context) (assignState, error) {
	ps, err := a.pool.Status(ctx)
	exists := err == nil
	if errors.Is(err, assign.ErrUnknownPool) {
		ps, err = assign.Status{Members: []assign.Member{}, Now: a.now()}, nil
	}
	if err != nil {
		return assignState{}, err
	}
	ms := ps.Members
	owned := ps.Owner == assignOwner
	st := assignState{Demo: a.demo, Exists: exists, Owned: owned, Writable: exists && (owned || a.writeAny),
		Pool: a.poolName, Members: ms, ScriptReloads: a.pool.ScriptReloads(), Now: ps.Now, LastResort: ps.Settings.LastResort,
		Leases: ps.Leases, OpenLeases: ps.OpenLeases}
	if st.Leases == nil {
		st.Leases = []assign.Lease{}
	}
	if a.demo {
		st.Server = "miniredis " + a.mini.Addr()
	} else {
		st.Server = redact.URL(a.redisURL)
	}
	lo, hi := int64(1<<62), int64(-1)
	for _, m := range ms {
		st.Total += m.Count
		if m.Active {
			lo, hi = min(lo, m.Count), max(hi, m.Count)
		}
	}
	if hi >= 0 {
		st.Spread = hi - lo
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	// Picks per second over the last two seconds or so, from the pool's
	// own total: it counts every worker's picks, not only this page's.
	a.samples = append(a.samples, totalSample{now, st.Total})
	for len(a.samples) > 2 && now.Sub(a.samples[1].at) >= 2*time.Second {
		a.samples = a.samples[1:]
	}
	if first := a.samples[0]; now.Sub(first.at) >= 250*time.Millisecond && st.Total >= first.total {
		st.PicksPerS = float64(st.Total-first.total) / now.Sub(first.at).Seconds()
	}
	if a.loadRate > 0 && now.Before(a.loadUntil) {
		st.Load = assignLoad{Rate: a.loadRate, Running: true, SecondsLeft: int(a.loadUntil.Sub(now).Seconds() + 0.5)}
	}
	if a.llm != nil {
		st.LLM = &assignLLM{FailingKey: llmFailingKey, FailEvery: llmFailEvery, RetryAfterS: int(llmRetryAfter / time.Second),
			RPM: llmRPM, Burst: llmBurst, Answered429: a.llm.calls[llmFailingKey] / llmFailEvery}
	}
	return st, nil
}

// ready starts the lab or answers 503.
func (a *assignLab) ready(w http.ResponseWriter) bool {
	if err := a.start(); err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "the assignment lab has no Redis: "+err.Error())
		return false
	}
	return true
}

// readyToWrite is ready, and answers 403 when the pool is not the lab's
// to change: the lab did not create it and the operator did not allow it.
func (a *assignLab) readyToWrite(w http.ResponseWriter, r *http.Request) bool {
	if !a.ready(w) {
		return false
	}
	if a.writeAny {
		return true
	}
	st, err := a.pool.Status(r.Context())
	if err != nil && !errors.Is(err, assign.ErrUnknownPool) { // no pool: no creator
		a.fail(w, err)
		return false
	}
	if st.Owner != assignOwner {
		writeError(w, http.StatusForbidden, "", fmt.Sprintf("pool %q was not created by the lab, so the lab only shows it; "+
			"serve with --assign-write to let the lab change it (or, if it is not there yet, POST /api/assign/create makes it)", a.poolName))
		return false
	}
	return true
}

func (a *assignLab) writeState(w http.ResponseWriter, r *http.Request, extra map[string]any) {
	st, err := a.state(r.Context())
	if err != nil {
		a.fail(w, err)
		return
	}
	if extra == nil {
		writeJSON(w, http.StatusOK, st)
		return
	}
	extra["state"] = st
	writeJSON(w, http.StatusOK, extra)
}

// fail maps the package's errors to statuses: bad input 400, an unknown
// member 409 (the pool changed under the page), an empty pool or none 409,
// a pool that is not the lab's to reset 403, the rest 503 (Redis is away or
// the outcome is unknown).
func (a *assignLab) fail(w http.ResponseWriter, err error) {
	var cooling *assign.CoolingError
	switch {
	case errors.As(err, &cooling):
		// What a router in front of the pool would answer: come back when
		// the first member does.
		wait := max(1, int(cooling.Until.Sub(a.now()).Seconds()+0.999))
		w.Header().Set("Retry-After", strconv.Itoa(wait))
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": err.Error(), "cooling_until": cooling.Until, "retry_after_s": wait})
	case errors.Is(err, assign.ErrInvalid):
		writeError(w, http.StatusBadRequest, "member", err.Error())
	case errors.Is(err, assign.ErrUnknownMember), errors.Is(err, assign.ErrPoolEmpty):
		writeError(w, http.StatusConflict, "", err.Error())
	case errors.Is(err, assign.ErrUnknownPool):
		writeError(w, http.StatusConflict, "", err.Error()+"; POST /api/assign/create makes it")
	case errors.Is(err, assign.ErrNotOwner):
		writeError(w, http.StatusForbidden, "", fmt.Sprintf("pool %q was not created by the lab: the lab resets only a pool it created, "+
			"even with --assign-write (a reset deletes what is there)", a.poolName))
	default:
		a.logger.Warn("assignment lab", "err", err)
		writeError(w, http.StatusServiceUnavailable, "", err.Error())
	}
}

// get answers GET /api/assign: the pool's state. It only reads: a GET
// can come from any page the user visits (an <img> of another site), so
// making the pool is POST /api/assign/create's.
func (a *assignLab) get(w http.ResponseWriter, r *http.Request) {
	if r.URL.RawQuery != "" {
		writeError(w, http.StatusBadRequest, "", "this endpoint takes no parameters")
		return
	}
	if !a.ready(w) {
		return
	}
	a.writeState(w, r, nil)
}

// change is the shape of the lab's POST handlers: the body decoded, then,
// if the pool is the lab's to change, act on it; the answer is the pool's
// new state with the fields act adds, or the error mapped by fail.
func change[T any](a *assignLab, decode func([]byte) (T, *apiError), act func(ctx context.Context, v T) (map[string]any, error)) http.HandlerFunc {
	return jsonHandler(a.maxBody, decode, func(w http.ResponseWriter, r *http.Request, v T) {
		if !a.readyToWrite(w, r) {
			return
		}
		extra, err := act(r.Context(), v)
		if err != nil {
			a.fail(w, err)
			return
		}
		a.writeState(w, r, extra)
	})
}

// pick answers POST /api/assign/pick {"n": 1}.
func (a *assignLab) pick() http.HandlerFunc {
	return change(a, decodePick, func(ctx context.Context, n int) (map[string]any, error) {
		picked, answered429, err := a.picks(ctx, n)
		if err != nil {
			return nil, err
		}
		return map[string]any{"picked": picked, "answered_429": answered429}, nil
	})
}

// picks makes up to n picks and returns the members picked, stopping at
// the first refusal (its error only when nothing was picked). In the LLM
// demo it picks one at a time and sends each request to the simulated
// upstream, whose 429s cool the key down (RecordFailureRetryAfter) before
// the next pick, as a router's would; it returns the keys that answered
// 429.
func (a *assignLab) picks(ctx context.Context, n int) ([]string, []string, error) {
	picked := make([]string, 0, n)
	a.mu.Lock()
	llm := a.llm
	a.mu.Unlock()
	if llm == nil {
		res, err := a.pool.PickBatch(ctx, n)
		if err != nil {
			return nil, nil, err
		}
		for _, x := range res {
			if x.Err != nil {
				if len(picked) == 0 {
					return nil, nil, x.Err
				}
				break
			}
			picked = append(picked, x.Member)
		}
		return picked, nil, nil
	}
	var answered429 []string
	for range n {
		m, err := a.pool.Pick(ctx)
		if err != nil {
			if len(picked) == 0 {
				return nil, nil, err
			}
			break
		}
		picked = append(picked, m)
		a.mu.Lock()
		llm.calls[m]++
		fail := m == llmFailingKey && llm.calls[m]%llmFailEvery == 0
		a.mu.Unlock()
		if fail {
			if _, err := a.pool.RecordFailure(ctx, m, llmRetryAfter); err != nil {
				return picked, answered429, err
			}
			answered429 = append(answered429, m)
		}
	}
	return picked, answered429, nil
}

// cooldown answers POST /api/assign/cooldown {"member": "proxy-01",
// "seconds": 15}: the member put aside for that long by Redis's clock.
func (a *assignLab) cooldown() http.HandlerFunc {
	return change(a, decodeCooldown, func(ctx context.Context, req cooldownRequest) (map[string]any, error) {
		until, err := a.pool.CooldownFor(ctx, time.Duration(req.seconds)*time.Second, req.member)
		if err != nil {
			return nil, err
		}
		return map[string]any{"cooling_until": until[0]}, nil
	})
}

// acquire answers POST /api/assign/acquire {"seconds": 30}: the
// least-used member with room under its concurrency cap, counted and
// leased for that long by Redis's clock (429 with Retry-After when none
// has room).
func (a *assignLab) acquire() http.HandlerFunc {
	return change(a, decodeAcquire, func(ctx context.Context, seconds int) (map[string]any, error) {
		l, err := a.pool.PickLease(ctx, time.Duration(seconds)*time.Second)
		if err != nil {
			return nil, err
		}
		return map[string]any{"lease": l}, nil
	})
}

// release answers POST /api/assign/release {"id": "3", "member":
// "proxy-01"}: the lease ended, and its member's room back.
func (a *assignLab) release() http.HandlerFunc {
	return change(a, decodeRelease, func(ctx context.Context, l assign.Lease) (map[string]any, error) {
		open, err := a.pool.Release(ctx, l)
		if err != nil {
			return nil, err
		}
		return map[string]any{"was_open": open}, nil
	})
}

// concurrency answers POST /api/assign/concurrency {"cap": 2}: every
// member capped at that many leases in flight; 0 takes the caps away.
func (a *assignLab) concurrency() http.HandlerFunc {
	return change(a, decodeConcurrency, func(ctx context.Context, n int) (map[string]any, error) {
		st, err := a.pool.Status(ctx)
		if err != nil {
			return nil, err
		}
		names := make([]string, len(st.Members))
		for i, m := range st.Members {
			names[i] = m.Name
		}
		return nil, a.pool.SetConcurrency(ctx, n, names...)
	})
}

type cooldownRequest struct {
	member  string
	seconds int
}

// settings answers POST /api/assign/settings {"last_resort": "earliest"}:
// the pool's last resort, its failure-streak eviction kept.
func (a *assignLab) settings() http.HandlerFunc {
	return change(a, decodeSettings, func(ctx context.Context, lr assign.LastResort) (map[string]any, error) {
		s, err := a.pool.Settings(ctx)
		if err != nil {
			return nil, err
		}
		s.LastResort = lr
		return nil, a.pool.SetSettings(ctx, s)
	})
}

// llmDemo answers POST /api/assign/llm {"on": true}: the lab's pool made
// again as llmKeys API keys at zero, each limited to llmRPM requests a
// minute in bursts of llmBurst, the last resort fail, and the simulated
// upstream on; {"on": false} makes it the eight proxies again. Only a pool
// the lab created, as reset.
func (a *assignLab) llmDemo() http.HandlerFunc {
	return change(a, decodeLLM, func(ctx context.Context, on bool) (map[string]any, error) {
		a.stopLoad()
		if !on {
			return nil, a.reset(ctx, assignDemoMembers)
		}
		keys := llmKeyNames()
		if err := a.pool.Reset(ctx, assignOwner, 0, keys...); err != nil {
			return nil, err
		}
		if err := a.pool.SetLimit(ctx, assign.Limit{Rate: llmRPM, Per: time.Minute, Burst: llmBurst}, keys...); err != nil {
			return nil, err
		}
		s, err := a.pool.Settings(ctx)
		if err != nil {
			return nil, err
		}
		s.LastResort = assign.LastResortFail
		if err := a.pool.SetSettings(ctx, s); err != nil {
			return nil, err
		}
		a.mu.Lock()
		a.samples, a.llm = nil, &llmDemo{calls: map[string]int{}}
		a.mu.Unlock()
		return nil, nil
	})
}

// member answers POST /api/assign/remove {"member": "proxy-01"} and
// POST /api/assign/restore {"member": "proxy-01", "policy": "zero"}.
func (a *assignLab) member(restore bool) http.HandlerFunc {
	decode := func(body []byte) (memberRequest, *apiError) {
		m, policy, aerr := decodeMember(body, restore)
		return memberRequest{m, policy}, aerr
	}
	return change(a, decode, func(ctx context.Context, req memberRequest) (map[string]any, error) {
		if restore {
			return nil, a.pool.Restore(ctx, req.policy, req.member)
		}
		return nil, a.pool.Remove(ctx, req.member)
	})
}

type memberRequest struct {
	member string
	policy assign.RestorePolicy
}

// resetPool answers POST /api/assign/reset {"members": 8}: the pool emptied
// and refilled with that many members at zero — only a pool the lab
// created, whatever --assign-write allows.
func (a *assignLab) resetPool() http.HandlerFunc {
	return change(a, decodeReset, func(ctx context.Context, n int) (map[string]any, error) {
		return nil, a.reset(ctx, n)
	})
}

// createPool answers POST /api/assign/create {"members": 8}: the pool
// made with that many members at zero, and the lab recorded as its
// creator, if nothing of it is on the Redis; otherwise nothing changes.
// The answer says which ({"created": true|false, "state": …}).
func (a *assignLab) createPool() http.HandlerFunc {
	return jsonHandler(a.maxBody, decodeReset, func(w http.ResponseWriter, r *http.Request, n int) {
		if !a.ready(w) {
			return
		}
		created, err := a.create(r.Context(), n)
		if err != nil {
			a.fail(w, err)
			return
		}
		a.writeState(w, r, map[string]any{"created": created})
	})
}

// load answers POST /api/assign/load {"rate": 500}: picks at that rate in
// the background, as a worker would, for two minutes at most; 0 stops.
func (a *assignLab) load() http.HandlerFunc {
	return change(a, decodeLoad, func(_ context.Context, rate int) (map[string]any, error) {
		a.stopLoad()
		a.mu.Lock()
		defer a.mu.Unlock()
		a.loadRate, a.loadCancel, a.loadDone = rate, nil, nil
		if rate > 0 {
			// The load outlives the request that starts it, by design: it
			// stops by itself after assignLoadFor, or when asked.
			ctx, cancel := context.WithTimeout(context.Background(), assignLoadFor)
			done := make(chan struct{})
			a.loadRate, a.loadUntil, a.loadCancel, a.loadDone = rate, a.now().Add(assignLoadFor), cancel, done
			go a.runLoad(ctx, rate, done)
		}
		return nil, nil
	})
}

// stopLoad stops the load, if one runs, and waits until it has.
func (a *assignLab) stopLoad() {
	a.mu.Lock()
	if a.loadCancel != nil {
		a.loadCancel()
	}
	done := a.loadDone
	a.mu.Unlock()
	if done != nil {
		<-done
	}
}

// runLoad picks rate per second in 20 batches a second.
func (a *assignLab) runLoad(ctx context.Context, rate int, done chan struct{}) {
	defer close(done)
	defer func() {
		a.mu.Lock()
		if a.loadDone == done {
			a.loadRate = 0
		}
		a.mu.Unlock()
	}()
	const tick = 50 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	owed := 0.0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		owed += float64(rate) * tick.Seconds()
		n := int(owed)
		if n == 0 {
			continue
		}
		owed -= float64(n)
		// An empty pool (every member removed or cooling) is part of the
		// lesson: the picks fail and nothing is counted.
		if _, _, err := a.picks(ctx, n); err != nil && ctx.Err() == nil && !errors.Is(err, assign.ErrPoolEmpty) {
			a.logger.Warn("assignment lab load", "err", err)
		}
	}
}

// fields decodes a JSON object whose fields are among allowed.
func fields(body []byte, example string, allowed ...string) (map[string]json.RawMessage, *apiError) {
	return decodeObject(body, example, allowed)
}

func intField(f map[string]json.RawMessage, key string, def, lo, hi int64) (int64, *apiError) {
	raw, ok := f[key]
	if !ok {
		return def, nil
	}
	v, err := parseInt(raw)
	if err != nil || v < lo || v > hi {
		return 0, badRequest(key, "%s %s: want an integer from %d to %d", key, clip(raw), lo, hi)
	}
	return v, nil
}

// decodePick reads {"n": N}, N from 1 to 1,000 (default 1).
func decodePick(body []byte) (int, *apiError) {
	f, aerr := fields(body, `{"n": 1}`, "n")
	if aerr != nil {
		return 0, aerr
	}
	n, aerr := intField(f, "n", 1, 1, assignMaxPick)
	return int(n), aerr
}

// decodeMember reads {"member": "proxy-01"} and, to restore, an optional
// "policy": current-minimum (default), keep-history or zero.
func decodeMember(body []byte, restore bool) (string, assign.RestorePolicy, *apiError) {
	allowed := []string{"member"}
	if restore {
		allowed = append(allowed, "policy")
	}
	f, aerr := fields(body, `{"member": "proxy-01"}`, allowed...)
	if aerr != nil {
		return "", 0, aerr
	}
	var m string
	if raw, ok := f["member"]; !ok || unmarshal(raw, &m) != nil || m == "" || len(m) > assign.MaxMemberName {
		return "", 0, badRequest("member", "member %s: want the name of a member, 1 to %d bytes", clip(f["member"]), assign.MaxMemberName)
	}
	policy := assign.RestoreCurrentMinimum
	if raw, ok := f["policy"]; ok {
		var s string
		if unmarshal(raw, &s) != nil {
			return "", 0, badRequest("policy", "policy %s: want current-minimum, keep-history or zero", clip(raw))
		}
		if err := policy.UnmarshalText([]byte(s)); err != nil {
			return "", 0, badRequest("policy", "%v", err)
		}
	}
	return m, policy, nil
}

// decodeReset reads {"members": N}, N from 2 to 50 (default 8).
func decodeReset(body []byte) (int, *apiError) {
	f, aerr := fields(body, `{"members": 8}`, "members")
	if aerr != nil {
		return 0, aerr
	}
	n, aerr := intField(f, "members", assignDemoMembers, assignMinMembers, assignMaxMembers)
	return int(n), aerr
}

// decodeLoad reads {"rate": R}, R picks per second from 0 (stop) to 5,000.
func decodeLoad(body []byte) (int, *apiError) {
	f, aerr := fields(body, `{"rate": 500}`, "rate")
	if aerr != nil {
		return 0, aerr
	}
	if _, ok := f["rate"]; !ok {
		return 0, badRequest("rate", "rate missing: want picks per second from 0 (stop) to %d", assignMaxRate)
	}
	rate, aerr := intField(f, "rate", 0, 0, assignMaxRate)
	return int(rate), aerr
}

// decodeCooldown reads {"member": "proxy-01", "seconds": S}, S from 1 to
// 3,600, required.
func decodeCooldown(body []byte) (cooldownRequest, *apiError) {
	f, aerr := fields(body, `{"member": "proxy-01", "seconds": 15}`, "member", "seconds")
	if aerr != nil {
		return cooldownRequest{}, aerr
	}
	var m string
	if raw, ok := f["member"]; !ok || unmarshal(raw, &m) != nil || m == "" || len(m) > assign.MaxMemberName {
		return cooldownRequest{}, badRequest("member", "member %s: want the name of a member, 1 to %d bytes", clip(f["member"]), assign.MaxMemberName)
	}
	if _, ok := f["seconds"]; !ok {
		return cooldownRequest{}, badRequest("seconds", "seconds missing: want the cooldown in seconds, from 1 to %d", assignMaxCoolFor)
	}
	sec, aerr := intField(f, "seconds", 0, 1, assignMaxCoolFor)
	return cooldownRequest{m, int(sec)}, aerr
}

// decodeSettings reads {"last_resort": "fail" | "earliest"}, required.
func decodeSettings(body []byte) (assign.LastResort, *apiError) {
	f, aerr := fields(body, `{"last_resort": "earliest"}`, "last_resort")
	if aerr != nil {
		return 0, aerr
	}
	var s string
	raw, ok := f["last_resort"]
	if !ok || unmarshal(raw, &s) != nil {
		return 0, badRequest("last_resort", "last_resort %s: want fail or earliest", clip(raw))
	}
	var lr assign.LastResort
	if err := lr.UnmarshalText([]byte(s)); err != nil {
		return 0, badRequest("last_resort", "%v", err)
	}
	return lr, nil
}

// decodeLLM reads {"on": true | false}, required.
func decodeLLM(body []byte) (bool, *apiError) {
	f, aerr := fields(body, `{"on": true}`, "on")
	if aerr != nil {
		return false, aerr
	}
	var on bool
	if raw, ok := f["on"]; !ok || unmarshal(raw, &on) != nil {
		return false, badRequest("on", "on %s: want true (start the LLM demo) or false (back to the proxies)", clip(f["on"]))
	}
	return on, nil
}

// decodeAcquire reads {"seconds": S}, the lease's time, 1 to 3,600,
// required.
func decodeAcquire(body []byte) (int, *apiError) {
	f, aerr := fields(body, `{"seconds": 30}`, "seconds")
	if aerr != nil {
		return 0, aerr
	}
	if _, ok := f["seconds"]; !ok {
		return 0, badRequest("seconds", "seconds missing: want the lease's time in seconds, from 1 to %d", assignMaxCoolFor)
	}
	sec, aerr := intField(f, "seconds", 0, 1, assignMaxCoolFor)
	return int(sec), aerr
}

// decodeRelease reads {"id": "3", "member": "proxy-01"}, both required:
// a lease as acquire answered it.
func decodeRelease(body []byte) (assign.Lease, *apiError) {
	f, aerr := fields(body, `{"id": "3", "member": "proxy-01"}`, "id", "member")
	if aerr != nil {
		return assign.Lease{}, aerr
	}
	var l assign.Lease
	if raw, ok := f["id"]; !ok || unmarshal(raw, &l.ID) != nil || l.ID == "" || len(l.ID) > 20 || strings.Trim(l.ID, "0123456789") != "" {
		return assign.Lease{}, badRequest("id", "id %s: want the lease id acquire answered, a string of digits", clip(f["id"]))
	}
	if raw, ok := f["member"]; !ok || unmarshal(raw, &l.Member) != nil || l.Member == "" || len(l.Member) > assign.MaxMemberName {
		return assign.Lease{}, badRequest("member", "member %s: want the lease's member, 1 to %d bytes", clip(f["member"]), assign.MaxMemberName)
	}
	return l, nil
}

// decodeConcurrency reads {"cap": N}, N leases in flight from 0 (no cap)
// to assignMaxCap, required.
func decodeConcurrency(body []byte) (int, *apiError) {
	f, aerr := fields(body, `{"cap": 2}`, "cap")
	if aerr != nil {
		return 0, aerr
	}
	if _, ok := f["cap"]; !ok {
		return 0, badRequest("cap", "cap missing: want leases in flight per member, from 0 (no cap) to %d", assignMaxCap)
	}
	n, aerr := intField(f, "cap", 0, 0, assignMaxCap)
	return int(n), aerr
}
