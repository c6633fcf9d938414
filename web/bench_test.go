package web

import (
	"context"
	"io"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/afloat/afloat/sim"
)

// surgeRun is the longest built-in run, 240 minutes, with actions.
const surgeRun = "/api/run?scenario=surge&seed=7&noise=1&actions=0:target_utilization:0.45,30:fleet_floor:14,100:shed_low_priority:1,180:shed_low_priority:0"

// BenchmarkAPIRun is the server's time for a whole 240-minute run: decode
// the query, validate, simulate, encode 240 frames as JSON.
func BenchmarkAPIRun(b *testing.B) {
	h := Handler(DefaultConfig())
	req := localRequest("GET", surgeRun, nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
}

// BenchmarkAPIDebriefCoach is the server's time for the debrief of a whole
// game with the coach (POST /api/debrief, "coach": true): the score, the
// expert's run (par), the runbook's, the hindsight search and the coach's
// replays. Each iteration takes the next seed of each scenario in turn, so
// that nothing is answered from the flights' cache; max-ms is the slowest
// debrief seen (target: under 1 s).
func BenchmarkAPIDebriefCoach(b *testing.B) {
	h := Handler(DefaultConfig())
	players := map[string]string{
		"steady":      `[{"minute": 1, "control": "target_utilization", "value": 0.8}]`,
		"bad-deploy":  `[{"minute": 29, "control": "rollback"}]`,
		"surge":       `[{"minute": 1, "control": "fleet_floor", "value": 16}, {"minute": 100, "control": "shed_low_priority", "value": 0.5}, {"minute": 110, "control": "shed_low_priority", "value": 0}]`,
		"cache-flush": `[{"minute": 16, "control": "heavy_feature", "value": false}, {"minute": 30, "control": "warmup"}, {"minute": 40, "control": "heavy_feature", "value": true}]`,
		"mystery":     `[{"minute": 40, "control": "rollback"}, {"minute": 60, "control": "fleet_floor", "value": 24}, {"minute": 120, "control": "fleet_floor", "value": 13}]`,
	}
	names := sim.ScenarioNames()
	for _, name := range names {
		if players[name] == "" {
			b.Fatalf("no player's moves for %s", name)
		}
	}
	var slowest time.Duration
	i := 0
	for b.Loop() {
		name := names[i%len(names)]
		body := `{"scenario": "` + name + `", "seed": ` + strconv.Itoa(1+i/len(names)) + `, "actions": ` + players[name] + `, "coach": true}`
		i++
		req := localRequest("POST", "/api/debrief", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req)
		slowest = max(slowest, time.Since(start))
		if rec.Code != 200 {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
	b.ReportMetric(float64(slowest.Microseconds())/1000, "max-ms")
}

// BenchmarkAPIRunFloor is the simulation alone, in the same run: what no
// API can avoid.
func BenchmarkAPIRunFloor(b *testing.B) {
	cfg := sim.Config{Scenario: "surge", Seed: 7, Noise: true, Actions: []sim.Action{
		sim.Set(0, sim.ControlTargetUtilization, 0.45), sim.Set(30, sim.ControlFleetFloor, 14),
		sim.Set(100, sim.ControlShedLowPriority, 1), sim.Set(180, sim.ControlShedLowPriority, 0),
	}}
	for b.Loop() {
		if _, err := sim.Run(cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAPIRunLoopback is the same request over a real loopback
// connection, as the browser makes it.
func BenchmarkAPIRunLoopback(b *testing.B) {
	srv := httptest.NewServer(Handler(DefaultConfig()))
	defer srv.Close()
	client := srv.Client()
	for b.Loop() {
		res, err := client.Get(srv.URL + surgeRun)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
}

// BenchmarkConsoleTenX plays the whole bad-deploy scenario at 10× speed (a
// simulated minute every 100 ms) in headless Chromium and reports how long
// each minute took to draw (dashboard, 6 charts, controls), the interval
// the player saw between minutes, and the main thread's long tasks (over
// 50 ms). It needs chromium, like the browser test; one iteration is about
// 12 s, so run it with -benchtime 1x.
func BenchmarkConsoleTenX(b *testing.B) {
	base := startConsole(b)
	br := newBrowser(b)
	ctx := br.ctx
	var renders, intervals []float64
	longTasks := 0
	for b.Loop() {
		br.do(ctx, "start bad-deploy",
			chromedp.Navigate(base+"/"), waitReady(),
			click(`#scenario-bad-deploy`), setValue(`#seed`, "7"), click(`#start`), waitClock("09:00"),
			choose("speed", "10"), click(`#play`),
		)
		tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		if err := chromedp.Do(tctx, waitFor(`window.afloat.state.shown === 119`)); err != nil {
			cancel()
			b.Fatal(err)
		}
		cancel()
		perf := evaluate[struct {
			Renders   []float64 `json:"renders"`
			ShownAt   []float64 `json:"shownAt"`
			LongTasks int       `json:"longTasks"`
		}](br, ctx, `window.afloat.perf`)
		renders = append(renders, perf.Renders...)
		for i := 2; i < len(perf.ShownAt); i++ { // from minute 1 on: minute 0 is shown at the start
			intervals = append(intervals, perf.ShownAt[i]-perf.ShownAt[i-1])
		}
		longTasks += perf.LongTasks
	}
	br.noProblems()
	q := func(xs []float64, p float64) float64 {
		s := append([]float64(nil), xs...)
		slices.Sort(s)
		return s[min(len(s)-1, int(p*float64(len(s))))]
	}
	mean := 0.0
	for _, x := range intervals {
		mean += x
	}
	mean /= float64(len(intervals))
	b.ReportMetric(q(renders, 0.5), "render-p50-ms")
	b.ReportMetric(q(renders, 0.99), "render-p99-ms")
	b.ReportMetric(mean, "interval-mean-ms")
	b.ReportMetric(q(intervals, 0.99), "interval-p99-ms")
	b.ReportMetric(float64(longTasks)/float64(b.N), "long-tasks/run")
}
