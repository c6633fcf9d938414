package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/afloat/afloat/overload"
	"github.com/afloat/afloat/overload/live"
)

func TestOverloadCompareEndpoint(t *testing.T) {
	srv := newTestServer(t)
	for i, tc := range []struct {
		body   string
		status int
		field  string
		want   string
	}{
		{`{"profile": "olympics"}`, 400, "profile", `profile "olympics": want one of worldcup`},
		{`{"profile": 3}`, 400, "profile", `want a string, one of worldcup`},
		{`{"profile": "game1"}`, 400, "profile", `profile "game1": want one of worldcup, database`},
		{`{"profile": "database", "seed": -3}`, 400, "seed", "from 0 to 4294967295"},
		{`{"profile": "database", "seed": 4294967296}`, 400, "seed", "from 0 to 4294967295"},
		{`{"profile": "database", "profile": "healthy"}`, 400, "profile", "given more than once"},
		{`{"inside": 0}`, 400, "inside", "inside 0: want an integer from 1 to 65535"},
		{`{"inside": 1.5}`, 400, "inside", "from 1 to 65535"},
		{`{"outside": 65536}`, 400, "outside", "outside 65536: want an integer from 1 to 65535"},
		{`{"alpha": -0.1}`, 400, "alpha", "alpha -0.1: want a number from 0 (linear) to 100"},
		{`{"alpha": "0.5"}`, 400, "alpha", "want a number from 0 (linear) to 100"},
		{`{"alpha": 1e999}`, 400, "alpha", "want a number from 0 (linear) to 100"},
		{`{"alpha": null}`, 400, "alpha", "want a number from 0 (linear) to 100"},
		{`{"retries": 11}`, 400, "retries", "retries 11: want an integer from 0 to 10"},
		{`{"retries": -1}`, 400, "retries", "from 0 to 10"},
		{`{"max_patience_s": 9}`, 400, "max_patience_s", "max_patience_s 9: want seconds from 10 (the profile's timeout: all clients alike) to 86400"},
		{`{"profile": "database", "max_patience_s": 4.9}`, 400, "max_patience_s", "from 5 (the profile's timeout"},
		{`{"max_patience_s": 86401}`, 400, "max_patience_s", "to 86400"},
		{`{"max_patience_s": "600"}`, 400, "max_patience_s", "want seconds from 10"},
		{`{"max_patience_s": null}`, 400, "max_patience_s", "want seconds from 10"},
		{`{"limit": 5}`, 400, "limit", `unknown field "limit"`},
		{`{"profile": "database"`, 400, "", "malformed JSON"},
	} {
		status, _, body := call(t, srv, "POST", "/api/overload/compare", "application/json", []byte(tc.body))
		msg, _ := body["error"].(string)
		field, _ := body["field"].(string)
		if status != tc.status || field != tc.field || !strings.Contains(msg, tc.want) {
			t.Errorf("step %d: %s = %d %v; want %d field %q mentioning %q", i, tc.body, status, body, tc.status, tc.field, tc.want)
		}
	}
	if status, h, _ := call(t, srv, "GET", "/api/overload/compare?profile=database", "", nil); status != 405 || h.Get("Allow") != "POST" {
		t.Errorf("GET: %d Allow %q, want 405 and POST: a comparison costs seconds of CPU", status, h.Get("Allow"))
	}
}

// TestOverloadCompareAnswer: the answer is the package's own comparison,
// downsampled: the same runs, the same summaries. It computes the
// comparison twice (here and in the server), seconds of CPU each under
// the race detector, so make test runs it without (NORACE_WEB in the
// Makefile): the server's part that runs goroutines — the shared,
// capped, cancellable computation — is TestCompareIsSharedCappedAndCancelled's,
// under -race.
func TestOverloadCompareAnswer(t *testing.T) {
	srv := newTestServer(t)
	runs, err := overload.Compare(overload.Config{Profile: "database", Seed: 5, Inside: 30, Outside: 10, Alpha: 0.5, Retries: overload.NoRetries, MaxPatience: 60})
	if err != nil {
		t.Fatal(err)
	}
	// 202 while it computes (a second or more on a busy machine): ask
	// again, as the page does.
	var status int
	var body map[string]any
	for range 600 {
		status, _, body = call(t, srv, "POST", "/api/overload/compare", "application/json",
			[]byte(`{"profile": "database", "seed": 5, "inside": 30, "outside": 10, "alpha": 0.5, "retries": 0, "max_patience_s": 60}`))
		if status != 202 {
			break
		}
	}
	if status != 200 {
		t.Fatalf("status %d: %v", status, body)
	}
	got := body["runs"].([]any)
	if len(got) != len(runs) {
		t.Fatalf("%d runs, want %d", len(got), len(runs))
	}
	for i, r := range runs {
		want, _ := json.Marshal(r.Summary)
		var w map[string]any
		json.Unmarshal(want, &w)
		g := got[i].(map[string]any)
		if gs, _ := json.Marshal(g["summary"]); string(gs) != string(mustJSON(t, w)) {
			t.Errorf("run %d summary\n got %s\nwant %s", i, gs, want)
		}
		if n := len(g["series"].([]any)); n == 0 || n > 720 {
			t.Errorf("run %d: %d points, want 1 to 720", i, n)
		}
	}
	if body["inside"] != 30.0 || body["outside"] != 10.0 || body["alpha"] != 0.5 || body["retries"] != 0.0 || body["conns"] != 200.0 || body["max_patience_s"] != 60.0 || body["timeout_s"] != 5.0 {
		t.Errorf("the answer's parameters: %v", body)
	}
	if v, ok := body["variants"].([]any); !ok || len(v) != 0 {
		t.Errorf("variants %v: want none for the database, whose clients' retries are not the question", body["variants"])
	}
	if k := []string{"none", "threads", "bulkhead"}; got[0].(map[string]any)["kind"] != k[0] || got[1].(map[string]any)["kind"] != k[1] || got[2].(map[string]any)["kind"] != k[2] {
		t.Errorf("kinds of the runs: want %v", k)
	}
}

// TestGameEndpoint: the grid is the package's game; bad parameters are
// refused naming them.
func TestGameEndpoint(t *testing.T) {
	srv := newTestServer(t)
	g, err := overload.PlayGame("game2", 9)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(srv.URL + "/api/overload/game?game=game2&periods=9")
	if err != nil {
		t.Fatal(err)
	}
	var got overload.Game
	err = json.NewDecoder(res.Body).Decode(&got)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 || !reflect.DeepEqual(got, g) {
		t.Errorf("GET game2 for 9 periods: %d %v\n got %+v\nwant %+v", res.StatusCode, err, got, g)
	}
	for i, tc := range []struct{ query, field, want string }{
		{"game=game3", "game", `game "game3": want one of game1, game2`},
		{"periods=0", "periods", "periods \"0\": want an integer from 1 to 60"},
		{"periods=61", "periods", "from 1 to 60"},
		{"periods=x", "periods", "from 1 to 60"},
		{"game=game1&game=game2", "game", "given more than once"},
		{"speed=2", "speed", `unknown parameter "speed": this endpoint takes game, periods`},
	} {
		status, _, body := call(t, srv, "GET", "/api/overload/game?"+tc.query, "", nil)
		if msg, _ := body["error"].(string); status != 400 || body["field"] != tc.field || !strings.Contains(msg, tc.want) {
			t.Errorf("step %d: %s = %d %v; want 400 field %q mentioning %q", i, tc.query, status, body, tc.field, tc.want)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDownsample: counts become per-second rates, levels averages, the
// worst response the maximum — over whole steps, and a short last one.
func TestDownsample(t *testing.T) {
	series := []overload.Second{
		{T: 0, Arrivals: 10, Concurrency: 2, Worst: 1},
		{T: 1, Arrivals: 20, Retries: 6, Concurrency: 4, Worst: 3},
		{T: 2, Arrivals: 30, Retries: 10, Concurrency: 6, Worst: 2},
	}
	got := downsample(series, 2)
	// Concurrency is the step's last second's: the cumulative chart draws
	// arrivals minus departures against it. First tries are the tries that
	// are not retries.
	if len(got) != 2 || got[0].Arrivals != 15 || got[0].Retries != 3 || got[0].FirstTries != 12 || got[0].Concurrency != 4 || got[0].Worst != 3 ||
		got[1].T != 2 || got[1].Arrivals != 30 || got[1].FirstTries != 20 {
		t.Errorf("downsample = %+v", got)
	}
}

// TestLiveEndpoint: one live comparison at a time, followed by polling,
// with the runner replaced so that the test does not load the machine. It
// runs in a synctest bubble on the handler itself: synctest.Wait lets the
// background comparison finish without polling the clock.
func TestLiveEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, lab := newHandler(DefaultConfig())
		defer lab.stop()
		release := make(chan struct{})
		started := make(chan live.Config, 1)
		lab.runLive = func(ctx context.Context, cfg live.Config) (live.Report, error) {
			started <- cfg
			cfg.Progress("running afloat-fixed")
			cfg.Step(live.Step{What: live.StepRunning, Mode: "afloat-fixed", Attempt: 1, Attempts: 3})
			select {
			case <-release:
			case <-ctx.Done():
				return live.Report{}, ctx.Err()
			}
			return live.Report{Cores: 1, Capacity: 98, Modes: []live.ModeReport{{Mode: "afloat-fixed"}}}, nil
		}
		serve := func(method string) (int, map[string]any) {
			rec := httptest.NewRecorder()
			var req *http.Request
			if method == "POST" {
				req = localRequest(method, "/api/overload/live", strings.NewReader("{}"))
				req.Header.Set("Content-Type", "application/json")
			} else {
				req = localRequest(method, "/api/overload/live", nil)
			}
			h.ServeHTTP(rec, req)
			var body map[string]any
			json.Unmarshal(rec.Body.Bytes(), &body)
			return rec.Code, body
		}

		if status, body := serve("GET"); status != 200 || body["running"] != false || body["report"] != nil {
			t.Fatalf("before: %d %v", status, body)
		}
		if status, body := serve("POST"); status != 202 || body["running"] != true {
			t.Fatalf("start: %d %v", status, body)
		}
		cfg := <-started
		if len(cfg.Phases) != len(live.ShortPhases) {
			t.Errorf("phases %v, want the short ones", cfg.Phases)
		}
		synctest.Wait() // the runner has reported its progress and waits
		if status, body := serve("POST"); status != 409 || !strings.Contains(body["error"].(string), "already running") {
			t.Errorf("second start: %d %v", status, body)
		}
		// The step as data, for the page to say in its user's language.
		if _, body := serve("GET"); body["running"] != true || body["progress"] != "running afloat-fixed" ||
			!reflect.DeepEqual(body["step"], map[string]any{"what": "running", "mode": "afloat-fixed", "attempt": 1.0, "attempts": 3.0}) {
			t.Errorf("while running: %v", body)
		}
		close(release)
		synctest.Wait() // the comparison has finished and stored its report
		_, body := serve("GET")
		if rep, _ := body["report"].(map[string]any); body["running"] != false || rep == nil || rep["capacity"] != 98.0 || body["progress"] != "done" || body["step"] != nil {
			t.Errorf("after: %v", body)
		}
		if status, _ := serve("DELETE"); status != 405 {
			t.Errorf("DELETE: %d, want 405", status)
		}
	})
}

// TestLiveStopOnShutdown: a comparison in progress is cancelled when the
// console stops, and reports why.
func TestLiveStopOnShutdown(t *testing.T) {
	h, lab := newHandler(DefaultConfig())
	done := make(chan error, 1)
	lab.runLive = func(ctx context.Context, cfg live.Config) (live.Report, error) {
		<-ctx.Done()
		done <- ctx.Err()
		return live.Report{}, ctx.Err()
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	call(t, srv, "POST", "/api/overload/live", "application/json", []byte("{}"))
	lab.stop()
	if err := <-done; err != context.Canceled {
		t.Errorf("runner saw %v, want context.Canceled", err)
	}
}

// compareRequest is POST /api/overload/compare for profile database and seed.
func compareRequest(seed int) *http.Request {
	r := localRequest("POST", "/api/overload/compare", strings.NewReader(fmt.Sprintf(`{"profile": "database", "seed": %d}`, seed)))
	r.Header.Set("Content-Type", "application/json")
	return r
}

// TestCompareAnswers202WhileComputing: a slow comparison is answered 202
// with Retry-After, not held past the write timeout; the next ask after
// it is done gets the runs.
func TestCompareAnswers202WhileComputing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, lab := newHandler(DefaultConfig())
		release := make(chan struct{})
		lab.runCompare = func(ctx context.Context, base overload.Config) ([]overload.Result, error) {
			<-release
			base.Duration = 10
			return overload.Compare(base)
		}
		get := func() *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, compareRequest(2))
			return rec
		}
		rec := get() // waits lab.wait of virtual time, then gives up
		if rec.Code != 202 || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), `"computing":true`) {
			t.Fatalf("while computing: %d %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
		close(release)
		synctest.Wait()
		if rec := get(); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"runs"`) {
			t.Fatalf("once computed: %d %.200s", rec.Code, rec.Body)
		}
	})
}

// TestCompareIsSharedCappedAndCancelled: many asks for one key share one
// computation; a second key while one computes gets 503 + Retry-After;
// a computation nobody asks for again within the grace period is
// cancelled and forgotten, so the next ask starts it afresh.
func TestCompareIsSharedCappedAndCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, lab := newHandler(DefaultConfig())
		defer lab.stop()
		var started, cancelled atomic.Int32
		lab.runCompare = func(ctx context.Context, base overload.Config) ([]overload.Result, error) {
			started.Add(1)
			<-ctx.Done()
			cancelled.Add(1)
			return nil, ctx.Err()
		}
		ask := func(seed int) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, compareRequest(seed))
			return rec
		}
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				if rec := ask(7); rec.Code != 202 {
					t.Errorf("ask for seed 7: %d %s, want 202", rec.Code, rec.Body)
				}
			})
		}
		wg.Wait()
		if started.Load() != 1 {
			t.Fatalf("20 asks for one key started %d computations, want 1", started.Load())
		}
		if rec := ask(8); rec.Code != 503 || rec.Header().Get("Retry-After") == "" {
			t.Errorf("a second key while one computes: %d %q, want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
		}
		// Asked again within the grace period: it goes on.
		time.Sleep(lab.grace / 2)
		ask(7)
		time.Sleep(lab.grace - time.Millisecond)
		synctest.Wait()
		if cancelled.Load() != 0 {
			t.Fatalf("cancelled while asked for within the grace period")
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		if cancelled.Load() != 1 {
			t.Fatalf("cancelled %d times after the grace period with nobody asking, want 1", cancelled.Load())
		}
		// Forgotten: the cap is free again and the next ask starts afresh.
		ask(8)
		if started.Load() != 2 {
			t.Errorf("after the cancel, a new key started %d computations in all, want 2", started.Load())
		}
	})
}

// TestCompareStopsWhenTheClientLeaves: a client that gives up before the
// answer (a page closed, curl -m 0.2) does not leave the computation
// running beyond the grace period.
func TestCompareStopsWhenTheClientLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, lab := newHandler(DefaultConfig())
		defer lab.stop()
		stopped := make(chan error, 1)
		lab.runCompare = func(ctx context.Context, base overload.Config) ([]overload.Result, error) {
			<-ctx.Done()
			stopped <- ctx.Err()
			return nil, ctx.Err()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, compareRequest(3).WithContext(ctx))
		start := time.Now()
		if err := <-stopped; err != context.Canceled {
			t.Fatalf("computation ended with %v", err)
		}
		if d := time.Since(start); d != lab.grace {
			t.Errorf("stopped %v after the client left, want the grace period %v", d, lab.grace)
		}
	})
}

// FuzzCompareBody: the comparison's body either decodes to parameters a
// comparison takes — every one in its range, and valid for the model — or
// is refused with a 4xx naming what is wrong; it never panics.
func FuzzCompareBody(f *testing.F) {
	for _, s := range []string{compareExample, `{}`, `{"profile": "database", "retries": 0}`, `{"alpha": 1e999}`,
		`{"inside": 0}`, `{"outside": 65536}`, `{"seed": -1}`, `{"alpha": "0.5"}`, `{"profile": null}`, `[]`, `{"retries": 1.5}`,
		`{"max_patience_s": 9.99}`, `{"profile": "database", "max_patience_s": 5}`, `{"max_patience_s": null}`, `{"max_patience_s": 1e400}`,
		`{"retries": 1e-400}`, `{"seed": 1.0000000000000001}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		lp, _, aerr := decodeCompareFields(body)
		if aerr != nil {
			if aerr.status < 400 || aerr.status > 499 || aerr.msg == "" {
				t.Fatalf("%q: %+v", body, aerr)
			}
			return
		}
		if lp.Inside < 1 || lp.Outside < 1 || lp.Retries < 0 || lp.Retries > overload.MaxRetries || !(lp.Alpha >= 0 && lp.Alpha <= overload.MaxAlpha) ||
			!(lp.Patience > 0 && lp.Patience <= overload.MaxSeconds) {
			t.Fatalf("%q: accepted %+v", body, lp)
		}
		cfg, err := lp.config()
		if err == nil {
			_, err = overload.Runs(cfg)
		}
		if err != nil {
			t.Fatalf("%q: accepted %+v, which the model refuses: %v", body, lp, err)
		}
	})
}
