package web

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afloat/afloat/sim"
	"github.com/afloat/afloat/sim/bots"
)

func TestBotEndpoint(t *testing.T) {
	srv := newTestServer(t)
	for _, name := range bots.Names() {
		status, _, body := call(t, srv, "POST", "/api/bot", "application/json", []byte(`{"scenario": "bad-deploy", "seed": 7, "bot": "`+name+`"}`))
		if status != 200 {
			t.Fatalf("%s: %d %v", name, status, body)
		}
		want, err := bots.PlayBot(context.Background(), sim.Config{Scenario: "bad-deploy", Seed: 7, Noise: true}, name)
		if err != nil {
			t.Fatal(err)
		}
		got := body["score"].(map[string]any)["points"].(float64)
		if got != want.Score.Points || len(body["actions"].([]any)) != len(want.Config.Actions) {
			t.Errorf("%s: %v points, %v; want %v, %v", name, got, body["actions"], want.Score.Points, want.Config.Actions)
		}
		if body["share"] != want.Config.Query().Encode() {
			t.Errorf("%s: share %v", name, body["share"])
		}
	}
	for i, tc := range []struct{ body, field, want string }{
		{`{"scenario": "steady", "seed": 1}`, "bot", "bot missing"},
		{`{"scenario": "steady", "bot": "genius"}`, "bot", `"genius": want one of nothing, runbook, expert`},
		{`{"scenario": "steady", "bot": 3}`, "bot", "want a string"},
		{`{"scenario": "steady", "bot": "expert", "actions": [{"minute": 3, "control": "warmup"}]}`, "actions", "send no actions"},
	} {
		status, _, body := call(t, srv, "POST", "/api/bot", "application/json", []byte(tc.body))
		if status != 400 || body["field"] != tc.field || !strings.Contains(body["error"].(string), tc.want) {
			t.Errorf("step %d: %s: %d %v; want 400, field %s, %q", i, tc.body, status, body, tc.field, tc.want)
		}
	}
	if status, h, _ := call(t, srv, "GET", "/api/bot?scenario=steady&bot=expert", "", nil); status != 405 || h.Get("Allow") != "POST" {
		t.Errorf("GET /api/bot: %d, Allow %q", status, h.Get("Allow"))
	}
}

func TestDebriefScoreAndCoach(t *testing.T) {
	srv := newTestServer(t)
	// GET: the score and, for a whole run with noise, the percentiles.
	status, _, body := call(t, srv, "GET", "/api/debrief?scenario=bad-deploy&seed=7&actions=29:rollback", "", nil)
	if status != 200 {
		t.Fatalf("%d %v", status, body)
	}
	rb, _ := bots.Play(sim.Config{Scenario: "bad-deploy", Seed: 7, Noise: true}, bots.Runbook)
	if p := body["score"].(map[string]any)["points"]; p != rb.Score.Points {
		t.Errorf("score %v, the runbook's run scores %v", p, rb.Score.Points)
	}
	pc := body["percentiles"].(map[string]any)
	if pc["nothing"] != 100.0 || pc["expert"] != 0.0 || pc["runbook"].(float64) < 20 || pc["runbook"].(float64) > 80 {
		t.Errorf("percentiles %v: want 100 against doing nothing, 0 against the expert, about half against the runbook", pc)
	}
	if _, _, quiet := call(t, srv, "GET", "/api/debrief?scenario=bad-deploy&seed=7&noise=0", "", nil); quiet["percentiles"] != nil {
		t.Error("percentiles for a run without noise, which the shipped distributions do not describe")
	}
	if _, _, mid := call(t, srv, "GET", "/api/debrief?scenario=bad-deploy&seed=7&at=30", "", nil); mid["percentiles"] != nil || mid["score"] == nil {
		t.Error("a debrief at minute 30 has percentiles, or no score")
	}

	// POST with coach: the grade, par, the runbook and the what-ifs.
	status, _, body = call(t, srv, "POST", "/api/debrief", "application/json",
		[]byte(`{"scenario": "bad-deploy", "seed": 7, "actions": [{"minute": 29, "control": "rollback"}], "coach": true}`))
	if status != 200 {
		t.Fatalf("coach: %d %v", status, body)
	}
	c := body["coach"].(map[string]any)
	g := c["grade"].(map[string]any)
	if g["stars"] != 2.0 || g["par"] != c["par"].(map[string]any)["score"].(map[string]any)["points"] {
		t.Errorf("grade %v: want two stars (the runbook's run), par the expert's points", g)
	}
	nothing, _ := bots.Play(sim.Config{Scenario: "bad-deploy", Seed: 7, Noise: true}, bots.Nothing)
	if p := c["nothing"].(map[string]any)["score"].(map[string]any)["points"]; p != nothing.Score.Points {
		t.Errorf("coach's nothing scores %v, doing nothing on the seed %v", p, nothing.Score.Points)
	}
	w := c["what_ifs"].([]any)[0].(map[string]any)
	if w["kind"] != "moved" || w["clock"] != "09:11" || w["why"] != "deploy" {
		t.Errorf("first what-if %v: want the rollback moved to 09:11", w)
	}
	for i, tc := range []struct{ method, path, body, want string }{
		{"GET", "/api/debrief?scenario=steady&coach=1", "", "POST only"},
		{"POST", "/api/debrief", `{"scenario": "steady", "coach": true, "at": 30}`, "at must be the run's length, 120"},
		{"POST", "/api/debrief", `{"scenario": "steady", "coach": "yes"}`, "want true or false"},
	} {
		ct := ""
		if tc.method == "POST" {
			ct = "application/json"
		}
		status, _, body := call(t, srv, tc.method, tc.path, ct, []byte(tc.body))
		if status != 400 || body["field"] != "coach" || !strings.Contains(body["error"].(string), tc.want) {
			t.Errorf("step %d: %s %s %s: %d %v", i, tc.method, tc.path, tc.body, status, body)
		}
	}
}

func TestRunHints(t *testing.T) {
	srv := newTestServer(t)
	status, _, body := call(t, srv, "GET", "/api/run?scenario=bad-deploy&seed=7&hints=1&from=20&to=40", "", nil)
	if status != 200 {
		t.Fatalf("%d %v", status, body)
	}
	hs := body["hints"].([]any)
	if len(hs) == 0 {
		t.Fatal("no hint while the page fires and nobody rolls back")
	}
	first := hs[0].(map[string]any)
	if first["step"] != bots.StepRollback || first["after"] != 28.0 || first["minute"] != 29.0 {
		t.Errorf("first hint %v: want the rollback, after the page at minute 28", first)
	}
	// Once the player has rolled back, the runbook says nothing more.
	_, _, body = call(t, srv, "GET", "/api/run?scenario=bad-deploy&seed=7&hints=1&actions=29:rollback&from=29&to=60", "", nil)
	if hs := body["hints"].([]any); len(hs) != 0 {
		t.Errorf("hints after the rollback: %v", hs)
	}
	if _, _, plain := call(t, srv, "GET", "/api/run?scenario=bad-deploy&seed=7&to=5", "", nil); plain["hints"] != nil {
		t.Error("hints without asking")
	}
}

// TestFlightsShareCapAndCancel: askers of one key share one computation;
// beyond the cap a new key is refused; a computation nobody waits for any
// more is cancelled.
func TestFlightsShareCapAndCancel(t *testing.T) {
	g := newFlights[int](1, 4, time.Minute)
	var started atomic.Int32
	release := make(chan struct{})
	slow := func(ctx context.Context) (int, error) {
		started.Add(1)
		select {
		case <-release:
			return 42, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	var wg sync.WaitGroup
	results := make([]int, 5)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = g.do(context.Background(), "a", slow)
		}()
	}
	for started.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := g.do(context.Background(), "b", slow); !errors.Is(err, errBusy) {
		t.Errorf("a second key while one computes: %v, want errBusy", err)
	}
	close(release)
	wg.Wait()
	if started.Load() != 1 || fmt.Sprint(results) != "[42 42 42 42 42]" {
		t.Errorf("%d computations, results %v; want one, shared", started.Load(), results)
	}
	if v, err := g.do(context.Background(), "a", slow); v != 42 || err != nil || started.Load() != 1 {
		t.Errorf("a kept result was computed again: %v %v", v, err)
	}

	// The only asker leaves: the computation is cancelled.
	cancelled := make(chan struct{})
	ctx, leave := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := g.do(ctx, "c", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			close(cancelled)
			return 0, ctx.Err()
		})
		done <- err
	}()
	for g.startedCount() < 2 {
		time.Sleep(time.Millisecond)
	}
	leave()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the asker that left got %v", err)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("a computation nobody waits for goes on")
	}
}

func (g *flights[T]) startedCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started
}

// TestMysteryEverywhere: the mystery scenario plays through every route
// the others do — a run, a share link, a bot, a debrief — and the debrief
// names its incidents, with the minute the dashboard first showed each,
// only once the run is over, on the first seed that draws two incidents.
func TestMysteryEverywhere(t *testing.T) {
	srv := newTestServer(t)
	seed := uint32(1)
	var morning sim.Morning
	for ; ; seed++ {
		s, _ := sim.New(mustScenario(t, "mystery"), seed, true)
		if morning, _ = s.Morning(); len(morning.Incidents) == 2 {
			break
		}
	}
	q := fmt.Sprintf("scenario=mystery&seed=%d", seed)
	status, _, run := call(t, srv, "GET", "/api/run?"+q+"&to=240", "", nil)
	if status != 200 || len(run["frames"].([]any)) != 240 {
		t.Fatalf("run: %d %v", status, run["error"])
	}
	values, _ := url.ParseQuery(run["share"].(string))
	cfg, err := sim.ParseQuery(values)
	if err != nil || cfg.Scenario != "mystery" || cfg.Seed != seed {
		t.Fatalf("share link %q: %+v, %v", run["share"], cfg, err)
	}
	status, _, bot := call(t, srv, "POST", "/api/bot", "application/json", []byte(fmt.Sprintf(`{"scenario": "mystery", "seed": %d, "bot": "expert"}`, seed)))
	if status != 200 || len(bot["actions"].([]any)) == 0 {
		t.Fatalf("bot: %d %v", status, bot)
	}
	if _, _, mid := call(t, srv, "GET", "/api/debrief?"+q+"&at=100", "", nil); mid["incidents"] != nil || mid["morning"] != nil {
		t.Errorf("the morning is revealed before the end: %v, %v", mid["incidents"], mid["morning"])
	}
	status, _, end := call(t, srv, "GET", "/api/debrief?"+q, "", nil)
	if status != 200 {
		t.Fatalf("debrief: %d %v", status, end)
	}
	found := end["incidents"].([]any)
	if len(found) != len(morning.Incidents) || len(found) == 0 {
		t.Fatalf("incidents %v, the morning drew %v", found, morning.Incidents)
	}
	frames := run["frames"].([]any)
	for i, f := range found {
		f := f.(map[string]any)
		shown := f["shown"].(map[string]any)
		m := int(shown["minute"].(float64))
		if !morning.Has(sim.Incident(f["incident"].(string))) || m < 10 || frames[m].(map[string]any)["clock"] != shown["clock"] {
			t.Errorf("step %d: %v, the morning %+v", i, f, morning)
		}
	}
}

func mustScenario(t *testing.T, name string) sim.Scenario {
	t.Helper()
	sc, err := sim.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}
