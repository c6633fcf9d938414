package web

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/afloat/afloat/overload"
)

func TestOverloadCompareEndpoint(t *testing.T) {
	srv := newTestServer(t)
	for i, tc := range []struct {
		path   string
		status int
		field  string
		want   string
	}{
		{"/api/overload/compare?profile=olympics", 400, "profile", `profile "olympics": want one of worldcup`},
		{"/api/overload/compare?profile=game1&seed=-3", 400, "seed", "from 0 to 4294967295"},
		{"/api/overload/compare?profile=game1&seed=4294967296", 400, "seed", "from 0 to 4294967295"},
		{"/api/overload/compare?profile=game1&profile=game2", 400, "profile", "given more than once"},
		{"/api/overload/compare?limit=5", 400, "limit", `unknown parameter "limit"`},
	} {
		status, _, body := call(t, srv, "GET", tc.path, "", nil)
		msg, _ := body["error"].(string)
		if status != tc.status || body["field"] != tc.field || !strings.Contains(msg, tc.want) {
			t.Errorf("step %d: %s = %d %v; want %d field %q mentioning %q", i, tc.path, status, body, tc.status, tc.field, tc.want)
		}
	}

	// The answer is the package's own comparison, downsampled: the same
	// runs, the same summaries.
	runs, err := overload.Compare("game1", 5)
	if err != nil {
		t.Fatal(err)
	}
	status, _, body := call(t, srv, "GET", "/api/overload/compare?profile=game1&seed=5", "", nil)
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
		{T: 1, Arrivals: 20, Concurrency: 4, Worst: 3},
		{T: 2, Arrivals: 30, Concurrency: 6, Worst: 2},
	}
	got := downsample(series, 2)
	if len(got) != 2 || got[0].Arrivals != 15 || got[0].Concurrency != 3 || got[0].Worst != 3 || got[1].T != 2 || got[1].Arrivals != 30 {
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
		started := make(chan overload.LiveConfig, 1)
		lab.runLive = func(ctx context.Context, cfg overload.LiveConfig) (overload.LiveReport, error) {
			started <- cfg
			cfg.Progress("running afloat-fixed")
			select {
			case <-release:
			case <-ctx.Done():
				return overload.LiveReport{}, ctx.Err()
			}
			return overload.LiveReport{Cores: 1, Capacity: 98, Modes: []overload.ModeReport{{Mode: "afloat-fixed"}}}, nil
		}
		serve := func(method string) (int, map[string]any) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, "/api/overload/live", nil))
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
		if len(cfg.Phases) != len(overload.ShortPhases) {
			t.Errorf("phases %v, want the short ones", cfg.Phases)
		}
		synctest.Wait() // the runner has reported its progress and waits
		if status, body := serve("POST"); status != 409 || !strings.Contains(body["error"].(string), "already running") {
			t.Errorf("second start: %d %v", status, body)
		}
		if _, body := serve("GET"); body["running"] != true || body["progress"] != "running afloat-fixed" {
			t.Errorf("while running: %v", body)
		}
		close(release)
		synctest.Wait() // the comparison has finished and stored its report
		_, body := serve("GET")
		if rep, _ := body["report"].(map[string]any); body["running"] != false || rep == nil || rep["capacity"] != 98.0 || body["progress"] != "done" {
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
	lab.runLive = func(ctx context.Context, cfg overload.LiveConfig) (overload.LiveReport, error) {
		<-ctx.Done()
		done <- ctx.Err()
		return overload.LiveReport{}, ctx.Err()
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	call(t, srv, "POST", "/api/overload/live", "", nil)
	lab.stop()
	if err := <-done; err != context.Canceled {
		t.Errorf("runner saw %v, want context.Canceled", err)
	}
}

// TestCompareAnswers202WhileComputing: a slow comparison is answered 202
// with Retry-After, not held past the write timeout; the next ask after
// it is done gets the runs.
func TestCompareAnswers202WhileComputing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, lab := newHandler(DefaultConfig())
		release := make(chan struct{})
		lab.runCompare = func(profile string, seed uint32) ([]overload.Result, error) {
			<-release
			return overload.Compare("game1", seed)
		}
		get := func() *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/overload/compare?profile=game1&seed=2", nil))
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
