package web

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/afloat/afloat/overload"
	"github.com/afloat/afloat/overload/live"
)

// liveReports are the live comparison's answers the lab test serves, one
// trustworthy and one from a busy machine, in turn: the real comparison
// takes minutes of both cores (overload/live tests it, a hog included),
// and this test is about what the page makes of a report.
func liveReports() [2]live.Report {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	phases := func(good []float64, p99 float64) []live.PhaseReport {
		names := []string{"0.5x", "1x", "3x", "after 3x", "10x", "after 10x"}
		loads := []float64{0.5, 1, 3, 0.5, 10, 0.5}
		var out []live.PhaseReport
		for i, n := range names {
			out = append(out, live.PhaseReport{Name: n, Load: loads[i], Planned: 100, Sent: 100, Good: int(100 * good[i]),
				Goodput: good[i], P50: ms(10.5), P99: ms(p99), CPUShare: 0.97})
		}
		return out
	}
	cal := live.Calibration{Rounds: 4000, CPUShare: 0.98, NoLoadP50: ms(10.2), NoLoadP99: ms(12), Capacity: 96}
	mode := func(name string, good []float64, p99 float64) live.ModeReport {
		return live.ModeReport{Mode: name, Phases: phases(good, p99), Calibration: cal, Reliable: true,
			Recovery: map[string]time.Duration{"3x": 0, "10x": 0}, Attempts: []live.Attempt{{Calibration: cal, OK: true}}}
	}
	ok := live.Report{Cores: 1, Work: ms(10), Deadline: ms(100), Capacity: 96, NoLoadP50: ms(10.2), NoLoadP99: ms(12), Reliable: true,
		Modes: []live.ModeReport{
			mode("none", []float64{0.5, 0.49, 0, 0, 0, 0}, 95),
			mode("afloat-fixed", []float64{0.5, 0.95, 0.95, 0.5, 0.96, 0.5}, 13.2),
			mode("afloat-adaptive", []float64{0.5, 0.97, 0.97, 0.5, 0.96, 0.5}, 22),
			mode("failsafe-go", []float64{0.5, 1, 0.98, 0.5, 0.94, 0.5}, 31),
		},
		Conclusion: &live.Conclusion{Load: 10, Best: "afloat-fixed", Goodput: 0.96, P99Ratio: 1.1, None: 0}}
	// The busy machine's report is shaped as TestBusyMachineIsFlagged's
	// hog makes one (overload/live): the first calibration failed its
	// checks and ended the comparison there.
	busy := cal
	busy.CPUShare, busy.NoLoadP50, busy.Capacity = 0.509, ms(25.9), 44.1
	bad := live.Report{Cores: 1, Work: ms(10), Deadline: ms(100), StoppedEarly: true, Modes: []live.ModeReport{{
		Mode: "none", Calibration: busy, Attempts: []live.Attempt{{Calibration: busy, Checks: []live.Check{
			{Name: "cpu_share", Value: 0.509, Min: 0.85, Max: 1.05},
			{Name: "p50_vs_work", Value: 2.59, Min: 0.9, Max: 1.7},
			{Name: "capacity_vs_work", Value: 0.441, Min: 0.7, Max: 1.05},
		}}},
	}}}
	return [2]live.Report{ok, bad}
}

// TestOverloadLabEndToEnd opens the overload lab in headless Chromium and
// uses every control, in every language: it plays game 1 period by period
// and checks each cell of the grid against GET /api/overload/game, plays
// and pauses game 2, runs the World Cup and the database scenario from
// typed limits and checks the summaries against the API and that the
// Little's-law charts are drawn, reads the World Cup's first tries,
// retries and late answers from the chart's data table and the hypothesis
// table's runs and checks them against the API, refuses a limit out of
// range, and shows a trustworthy live report as charts with a conclusion
// and a busy machine's as a plain refusal. Welsh and Tagalog show no raw
// key or id.
func TestOverloadLabEndToEnd(t *testing.T) {
	t.Parallel()
	h, lab := newHandler(DefaultConfig())
	reports := liveReports()
	var lives atomic.Int32
	lab.runLive = func(ctx context.Context, cfg live.Config) (live.Report, error) {
		return reports[(lives.Add(1)-1)%2], nil
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); lab.stop() })
	base := srv.URL

	b := newBrowser(t)
	ctx := b.ctx
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch}); err != nil {
		t.Fatal(err)
	}
	// The World Cup comparison the page computes on opening takes a while
	// under the race detector: ask first, as the page would, until done.
	worldCup := compareAPI(t, base, `{"profile": "worldcup", "seed": 1}`)

	b.do(ctx, "open the lab", chromedp.Navigate(base+"/#lab"), waitReady(),
		waitFor(`document.querySelectorAll("#game-grid thead th").length === 2 && document.querySelectorAll("#lab-summary tbody tr").length === 5`))
	en := catalogue(t, "en")

	// Game 1, period by period: every cell against the API's grid, by
	// click and by keyboard.
	game1 := gameAPI(t, base, "game1")
	for p := 1; p <= 8; p++ {
		step := click("#game-step")
		if p%2 == 0 {
			step = press("#game-step")
		}
		b.do(ctx, fmt.Sprintf("game 1, period %d", p), step, waitFor(fmt.Sprintf(`document.querySelectorAll("#game-grid thead th").length === %d`, p+2)))
		checkGrid(t, b, ctx, game1, p, en)
	}
	if got, want := b.text(ctx, "#game-status"), fill(en["lab.games.period"], map[string]any{"period": 8, "inside": 6}); !strings.HasPrefix(got, want) {
		t.Errorf("game 1, period 8: the page says %q, want it to start %q", got, want)
	}
	b.shot(ctx, "lab-01-game1")
	b.do(ctx, "settle", waitSettled())
	b.checkAxe(ctx, "en: game 1 grid")

	// Game 2: play, pause, and the grid is still the API's.
	game2 := gameAPI(t, base, "game2")
	b.do(ctx, "game 2", choose("game-pick", "game2"), waitFor(`!document.getElementById("game-grid").hasAttribute("aria-busy") && document.querySelectorAll("#game-grid thead th").length === 2`),
		click("#game-play"), waitFor(`document.querySelectorAll("#game-grid thead th").length >= 8`), click("#game-play"))
	shown := evaluate[int](b, ctx, `document.querySelectorAll("#game-grid thead th").length`) - 2
	checkGrid(t, b, ctx, game2, shown, en)
	if got := b.text(ctx, "#game-play"); got != en["lab.games.play"] {
		t.Errorf("after a pause the play button says %q, want %q", got, en["lab.games.play"])
	}
	b.shot(ctx, "lab-02-game2")
	b.do(ctx, "reset", click("#game-reset"), waitFor(`document.querySelectorAll("#game-grid thead th").length === 2`))

	// The World Cup as the page computed it on opening: the API's summary,
	// the limits it ran with shown in the form, five charts and Little's law
	// drawn for no limit and 100/100.
	checkSummary(t, b, ctx, worldCup.summaries())
	for id, want := range map[string]string{"#lab-inside": "100", "#lab-outside": "100", "#lab-retries": "1", "#lab-patience": "1200"} {
		if got := evaluate[string](b, ctx, fmt.Sprintf(`document.querySelector(%q).value`, id)); got != want {
			t.Errorf("%s shows %q after the default run, want %q", id, got, want)
		}
	}
	b.do(ctx, "charts", waitFor(`document.querySelectorAll("#lab-charts .uplot").length === 5 && document.querySelectorAll("#lab-little .uplot").length === 2`))
	// Off the chart, each legend shows the last values, not "—" until a
	// hover.
	if dashes := evaluate[int](b, ctx, `[...document.querySelectorAll("#lab-charts .u-legend .u-value, #lab-little .u-legend .u-value")].filter((v) => v.textContent.trim() === "—").length`); dashes > 0 {
		t.Errorf("%d legend values read \"—\" with the cursor off the charts: want the last values", dashes)
	}
	note := b.text(ctx, "#lab-little-0 .little-note")
	if !strings.Contains(note, "requests were inside") {
		t.Errorf("Little's law note %q", note)
	}
	checkWorldCupSeries(t, b, ctx, worldCup, en)
	checkHypothesis(t, b, ctx, worldCup, en)
	b.shot(ctx, "lab-03-worldcup")
	viewShot(b, ctx, "lab-worldcup-view", "#exp-h", 1700) // docs/lab.png

	// A limit out of range is refused before anything is sent.
	b.do(ctx, "a limit of 0", typeReplacing("#lab-inside", "0"), click("#lab-run"))
	if got, want := b.text(ctx, "#lab-status"), fill(en["lab.field_error"], map[string]any{"field": en["lab.inside"], "lo": 1, "hi": 65535}); got != want {
		t.Errorf("inside 0: the page says %q, want %q", got, want)
	}
	// So is a most patient client who waits less than the least patient.
	b.do(ctx, "a patience of 5 s", typeReplacing("#lab-inside", "100"), typeReplacing("#lab-patience", "5"), click("#lab-run"))
	if got, want := b.text(ctx, "#lab-status"), fill(en["lab.field_error"], map[string]any{"field": en["lab.patience"], "lo": 10, "hi": 86400}); got != want {
		t.Errorf("patience 5 s: the page says %q, want %q", got, want)
	}

	// The database scenario from typed limits, the non-linear database and
	// (in make test-long) the linear one: the same page and charts, a
	// different number in the request.
	body := `{"profile": "database", "seed": 2, "inside": 20, "outside": 20, "retries": 0, "alpha": %s, "max_patience_s": 60}`
	alphas := []string{"0", "0.5"}
	if testing.Short() {
		alphas = alphas[1:]
	}
	for _, alpha := range alphas {
		want := compareAPI(t, base, fmt.Sprintf(body, alpha))
		b.do(ctx, "database, alpha "+alpha, choose("lab-profile", "database"), typeReplacing("#lab-seed", "2"), typeReplacing("#lab-inside", "20"),
			typeReplacing("#lab-outside", "20"), typeReplacing("#lab-retries", "0"), typeReplacing("#lab-patience", "60"), choose("lab-slowdown", alpha), click("#lab-run"),
			waitFor(fmt.Sprintf(`document.getElementById("lab-status").textContent === %q && document.querySelectorAll("#lab-summary tbody tr").length === 3`, en["lab.done"])))
		checkSummary(t, b, ctx, want.summaries())
		if !evaluate[bool](b, ctx, `document.getElementById("lab-hypothesis").hidden`) {
			t.Errorf("database: the World Cup's hypothesis is shown")
		}
		if got, part := b.text(ctx, "#lab-profile-desc"), fill(en["lab.patience.spread_s"], map[string]any{"min": 5, "max": 60}); !strings.Contains(got, part) {
			t.Errorf("database, patience 60 s: the page says %q, want it to say %q", got, part)
		}
		b.do(ctx, "database charts", waitFor(`document.querySelectorAll("#lab-charts .uplot").length === 3 && document.querySelectorAll("#lab-little .uplot").length === 2`))
	}
	b.do(ctx, "open a chart's table", click("#lab-chart-0 details summary"), waitFor(`document.querySelectorAll("#lab-chart-0 details tbody tr").length === 600`))
	b.shot(ctx, "lab-04-database")
	b.do(ctx, "settle", waitSettled())
	b.checkAxe(ctx, "en: database scenario, a chart table open")

	// The live comparison: a trustworthy report as two charts, a table and
	// a conclusion; then one from a busy machine as a warning, no figures.
	b.do(ctx, "live, trustworthy", click("#live-run"), waitFor(`document.querySelectorAll("#live-charts .uplot").length === 2`))
	if got, want := b.text(ctx, "#live-conclusion"), fill(en["lab.live.conclusion"], map[string]any{"load": 10, "best": en["lab.live.mode.afloat-fixed"], "goodput": "96 %", "ratio": "1.1", "none": "0 %"}); got != want {
		t.Errorf("live conclusion %q, want %q", got, want)
	}
	if n := evaluate[int](b, ctx, `document.querySelectorAll("#live-table tbody tr").length`); n != 24 {
		t.Errorf("live table: %d rows, want 4 protections × 6 phases", n)
	}
	b.shot(ctx, "lab-05-live")
	b.do(ctx, "settle", waitSettled())
	b.checkAxe(ctx, "en: live report")
	noRawLiveIDs(t, b, ctx, "en, trustworthy")
	b.do(ctx, "live, busy machine", click("#live-run"), waitFor(`!document.getElementById("live-warning").hidden`))
	warning := b.text(ctx, "#live-warning")
	share := fill(en["lab.check.line"], map[string]string{"mode": en["lab.live.mode.none"], "check": fill(en["lab.check.cpu_share"],
		map[string]string{"value": "51 %", "min": "85 %", "where": en["lab.check.where.calibration"]})})
	if !strings.HasPrefix(warning, en["lab.live.stopped_early"]) || !strings.Contains(warning, share) || !strings.HasSuffix(warning, en["lab.live.what_to_do"]) ||
		evaluate[int](b, ctx, `document.querySelectorAll("#live-charts .uplot").length`) != 0 || !evaluate[bool](b, ctx, `document.getElementById("live-table-wrap").hidden`) {
		t.Errorf("a busy machine's report: warning %q, want it said plainly (%q) with what to do, and no figures", warning, share)
	}
	if got := b.text(ctx, "#live-status"); got != en["lab.live.too_busy"] {
		t.Errorf("after a busy machine's report the status says %q, want %q", got, en["lab.live.too_busy"])
	}
	noRawLiveIDs(t, b, ctx, "en, busy machine")

	// A language chosen on another page: back on the lab, the message it
	// showed is said again in that language (the lab once kept it in the
	// language it was shown in).
	cy := catalogue(t, "cy")
	b.do(ctx, "Welsh on the game's page", chromedp.Evaluate[chromedp.Void](`location.hash = "#play"`), waitFor(`document.getElementById("lab").hidden`),
		choose("lang", "cy"), waitFor(`document.documentElement.lang === "cy"`),
		chromedp.Evaluate[chromedp.Void](`location.hash = "#lab"`), waitFor(`!document.getElementById("lab").hidden`))
	if got := b.text(ctx, "#lab-status"); got != cy["lab.done"] {
		t.Errorf("back on the lab in Welsh, its status says %q, want %q", got, cy["lab.done"])
	}
	b.do(ctx, "English again", choose("lang", "en"), waitFor(`document.documentElement.lang === "en"`))

	// Every control again in Welsh and Tagalog, reading what the page says.
	rawKey := regexp.MustCompile(`^[a-z_]+(\.[a-z0-9_-]+)+$`)
	rawIDs := append(append(overload.ProfileNames(), overload.GameNames...), live.Modes...)
	for _, lang := range someLanguages(testing.Short(), "tl", "cy") {
		c := catalogue(t, lang)
		b.do(ctx, lang, choose("lang", lang), waitFor(fmt.Sprintf(`document.documentElement.lang === %q`, lang)))
		b.do(ctx, lang+": game 1", choose("game-pick", "game1"), waitFor(`!document.getElementById("game-grid").hasAttribute("aria-busy") && document.querySelectorAll("#game-grid thead th").length === 2`),
			click("#game-step"), click("#game-step"), press("#game-step"), click("#game-step"),
			waitFor(`document.querySelectorAll("#game-grid thead th").length === 6`))
		checkGrid(t, b, ctx, game1, 4, c)
		if got, want := b.text(ctx, "#game-status"), fill(c["lab.games.period"], map[string]any{"period": 4, "inside": 4}); !strings.HasPrefix(got, want) {
			t.Errorf("%s: game 1, period 4 says %q, want it to start %q", lang, got, want)
		}
		b.do(ctx, lang+": play and pause", click("#game-play"), waitFor(`document.querySelectorAll("#game-grid thead th").length >= 7`), click("#game-play"), click("#game-reset"))
		// The World Cup again (the console kept it): its three series read
		// from the chart's table in this language, and the hypothesis.
		b.do(ctx, lang+": World Cup", choose("lab-profile", "worldcup"), typeReplacing("#lab-seed", "1"), choose("lab-slowdown", "0"), click("#lab-run"),
			waitFor(fmt.Sprintf(`document.getElementById("lab-status").textContent === %q && document.querySelectorAll("#lab-summary tbody tr").length === 5 && !document.getElementById("lab-hypothesis").hidden`, c["lab.done"])))
		checkWorldCupSeries(t, b, ctx, worldCup, c)
		checkHypothesis(t, b, ctx, worldCup, c)
		b.do(ctx, lang+": database", choose("lab-profile", "database"), typeReplacing("#lab-seed", "2"), typeReplacing("#lab-inside", "20"),
			typeReplacing("#lab-outside", "20"), typeReplacing("#lab-retries", "0"), typeReplacing("#lab-patience", "60"), choose("lab-slowdown", "0.5"), click("#lab-run"),
			waitFor(fmt.Sprintf(`document.getElementById("lab-status").textContent === %q`, c["lab.done"])))
		if got := b.text(ctx, "#lab-summary thead th:nth-child(2)"); got != c["lab.col.goodput"] {
			t.Errorf("%s: the summary's goodput column is headed %q, want %q", lang, got, c["lab.col.goodput"])
		}
		// The live comparison: a trustworthy report, then a busy machine's
		// refusal, each with no raw id.
		b.do(ctx, lang+": live", click("#live-run"), waitFor(fmt.Sprintf(`document.getElementById("live-status").textContent === %q && document.querySelectorAll("#live-charts .uplot").length === 2`, c["lab.live.done"])))
		noRawLiveIDs(t, b, ctx, lang+", trustworthy")
		b.do(ctx, lang+": live again", click("#live-run"), waitFor(fmt.Sprintf(`document.getElementById("live-status").textContent === %q && !document.getElementById("live-warning").hidden`, c["lab.live.too_busy"])))
		if w := b.text(ctx, "#live-warning"); !strings.HasPrefix(w, c["lab.live.stopped_early"]) || !strings.HasSuffix(w, c["lab.live.what_to_do"]) ||
			!strings.Contains(w, c["lab.check.where.calibration"]) || !strings.Contains(w, c["lab.live.mode.none"]+": ") {
			t.Errorf("%s: a busy machine's refusal %q: want it said in this language, naming the protection, with what to do", lang, w)
		}
		noRawLiveIDs(t, b, ctx, lang+", busy machine")
		missing := evaluate[[]string](b, ctx, `[...window.afloat.missing]`)
		texts := evaluate[[]string](b, ctx, `(() => { const w = document.createTreeWalker(document.getElementById("lab"), NodeFilter.SHOW_TEXT); const out = []; while (w.nextNode()) { const s = w.currentNode.textContent.trim(); if (s) out.push(s); } return out.concat([...document.querySelectorAll("#lab option")].map((o) => o.textContent)); })()`)
		if len(missing) > 0 {
			t.Errorf("%s: keys missing from the catalogue: %v", lang, missing)
		}
		for _, s := range texts {
			if rawKey.MatchString(s) {
				t.Errorf("%s: a raw key is shown: %q", lang, s)
			}
			for _, id := range rawIDs {
				if s == id {
					t.Errorf("%s: a raw id is shown: %q", lang, s)
				}
			}
		}
		b.shot(ctx, "lab-06-"+lang)
		b.do(ctx, "settle", waitSettled())
		b.checkAxe(ctx, lang+": overload lab")
	}
	if csp := evaluate[[]string](b, ctx, `window.__csp || []`); len(csp) > 0 {
		t.Errorf("Content-Security-Policy violations: %v", csp)
	}
	b.noProblems()
}

// viewShot saves what a window of the given height shows with an element
// at its top: a part of a long page, for docs/guide.md; when screenshots
// are asked for (-screenshots).
func viewShot(b *browser, ctx context.Context, name, css string, height int64) {
	b.t.Helper()
	if *screenshotDir == "" {
		return
	}
	b.do(ctx, "view "+css, chromedp.EmulateViewport(1400, height), chromedp.ScrollIntoView(chromedp.CSS(css)),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).scrollIntoView({block: "start"})`, css)))
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	b.do(ctx, "restore the window", chromedp.EmulateViewport(1400, 1000))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(b.shotDir(), name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// gameAPI is GET /api/overload/game for the page's 24 periods.
func gameAPI(t *testing.T, base, name string) overload.Game {
	t.Helper()
	res, err := http.Get(base + "/api/overload/game?game=" + name + "&periods=24")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var g overload.Game
	if err := json.NewDecoder(res.Body).Decode(&g); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET game %s: %d %v", name, res.StatusCode, err)
	}
	return g
}

// comparison is an answer of POST /api/overload/compare, as far as the
// lab's test reads it.
type comparison struct {
	Runs []struct {
		Summary map[string]any       `json:"summary"`
		Series  []map[string]float64 `json:"series"`
	} `json:"runs"`
	Variants []struct {
		Alpha   float64        `json:"alpha"`
		Summary map[string]any `json:"summary"`
	} `json:"variants"`
}

// summaries are the runs' summaries as the page's summary table shows them.
func (c comparison) summaries() []map[string]any {
	var sums []map[string]any
	for _, r := range c.Runs {
		sums = append(sums, r.Summary)
	}
	return sums
}

// compareAPI posts a comparison until it is computed and returns it.
func compareAPI(t *testing.T, base, body string) comparison {
	t.Helper()
	for giveUp := time.Now().Add(5 * time.Minute); time.Now().Before(giveUp); {
		res, err := http.Post(base+"/api/overload/compare", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var out comparison
		err = json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		switch {
		case err != nil || (res.StatusCode != 200 && res.StatusCode != 202 && res.StatusCode != 503):
			t.Fatalf("POST /api/overload/compare %s: %d %v", body, res.StatusCode, err)
		case res.StatusCode == 200:
			return out
		}
		<-time.After(time.Second) // 202: computing; 503: another one is
	}
	t.Fatalf("POST /api/overload/compare %s: not done in 5 minutes", body)
	return comparison{}
}

// checkWorldCupSeries opens the data table of the World Cup's run without
// a limit and reads from it, in the page's language, the three series the
// article's telling needs apart — first tries (its blue), retries and
// answers that came after the client had gone — every point against the
// API's.
func checkWorldCupSeries(t *testing.T, b *browser, ctx context.Context, want comparison, cat map[string]string) {
	t.Helper()
	series := want.Runs[0].Series
	b.do(ctx, "open the World Cup's chart table", chromedp.Evaluate[chromedp.Void](`document.querySelector("#lab-chart-0 details").open = true`),
		waitFor(fmt.Sprintf(`document.querySelectorAll("#lab-chart-0 details tbody tr").length === %d`, len(series))))
	table := evaluate[[][]string](b, ctx, `[...document.querySelectorAll("#lab-chart-0 details tr")].map((tr) => [...tr.cells].map((c) => c.textContent))`)
	for _, s := range []struct{ key, field string }{{"first_tries", "first_tries"}, {"retries", "retries"}, {"late", "late"}} {
		col := slices.Index(table[0], cat["lab.series."+s.key])
		if col < 0 {
			t.Errorf("the World Cup's chart table has no column %q: %v", cat["lab.series."+s.key], table[0])
			continue
		}
		seen := 0.0
		for i, p := range series {
			if got, w := table[i+1][col], strconv.FormatFloat(p[s.field], 'f', 1, 64); got != w {
				t.Errorf("%s at %s: the table says %q, the API %s", s.key, table[i+1][0], got, w)
				break
			}
			seen = max(seen, p[s.field])
		}
		if seen == 0 {
			t.Errorf("%s: zero all day; want the retry storm drawn", s.key)
		}
	}
	b.do(ctx, "close it", chromedp.Evaluate[chromedp.Void](`document.querySelector("#lab-chart-0 details").open = false`))
}

// checkHypothesis reads the table beside afloat's hypothesis: the day
// without a limit as compared, without retries on the linear server (it
// recovers) and on the non-linear one (it dies), against the API's runs.
func checkHypothesis(t *testing.T, b *browser, ctx context.Context, want comparison, cat map[string]string) {
	t.Helper()
	rows := evaluate[[][]string](b, ctx, `[...document.querySelectorAll("#lab-hypothesis-table tbody tr")].map((tr) => [...tr.cells].map((c) => c.textContent))`)
	if len(want.Variants) != 2 || len(rows) != 3 {
		t.Fatalf("hypothesis: %d rows on the page, %d variants from the API; want 3 and 2", len(rows), len(want.Variants))
	}
	sums := []map[string]any{want.Runs[0].Summary, want.Variants[0].Summary, want.Variants[1].Summary}
	for i, s := range sums {
		useful := fmt.Sprintf("%.0f %%", 100*s["useful_after_peak"].(float64))
		rec := cat["lab.never"]
		if r := s["recovery_s"].(float64); r >= 0 {
			rec = strconv.FormatFloat(r, 'f', -1, 64) + " s"
		}
		if rows[i][1] != useful || rows[i][4] != rec {
			t.Errorf("hypothesis row %d %q: %q answered after the peak, recovery %q; the API has %s and %s", i, rows[i][0], rows[i][1], rows[i][4], useful, rec)
		}
	}
	if l, n := sums[1]["recovery_s"].(float64), sums[2]["recovery_s"].(float64); l < 0 || n >= 0 || want.Variants[1].Alpha != overload.NonLinearAlpha {
		t.Errorf("without retries: the linear server's recovery %v, the non-linear one's (α %v) %v; want a recovery, then none", l, want.Variants[1].Alpha, n)
	}
	if got, w := rows[2][0], fill(cat["lab.hypothesis.row.nonlinear"], map[string]float64{"alpha": overload.NonLinearAlpha}); got != w {
		t.Errorf("hypothesis: the non-linear row is named %q, want %q", got, w)
	}
}

// noRawLiveIDs fails the test if the live comparison's part of the page
// shows a protection's or a check's id, a phase's name, or the old
// jargon, where a person should read names and words.
func noRawLiveIDs(t *testing.T, b *browser, ctx context.Context, where string) {
	t.Helper()
	texts := evaluate[[]string](b, ctx, `(() => { const out = []; for (const id of ["live-status", "live-warning", "live-conclusion", "live-calibration", "live-charts", "live-table-wrap"]) { const w = document.createTreeWalker(document.getElementById(id), NodeFilter.SHOW_TEXT); while (w.nextNode()) { const s = w.currentNode.textContent.trim(); if (s) out.push(s); } } return out; })()`)
	var phases []string
	for _, p := range live.ShortPhases {
		phases = append(phases, p.Name)
	}
	for _, s := range texts {
		for _, id := range append(slices.Clone(live.Modes), phases...) {
			if s == id || strings.HasPrefix(s, id+":") || strings.Contains(s, "("+id+")") {
				t.Errorf("%s: the live comparison shows the raw id %q in %q", where, id, s)
			}
		}
		for _, id := range []string{"afloat-fixed", "afloat-adaptive", "cpu_share", "p50_vs_work", "capacity_vs_work", "attempt(s)", "(phase", "want "} {
			if strings.Contains(s, id) {
				t.Errorf("%s: the live comparison shows %q in %q", where, id, s)
			}
		}
	}
}

// checkSummary compares the page's summary table with the API's
// summaries: the goodput and the requests the bulkhead refused, the first
// two columns after the run's name in every profile.
func checkSummary(t *testing.T, b *browser, ctx context.Context, want []map[string]any) {
	t.Helper()
	rows := evaluate[[][]string](b, ctx, `[...document.querySelectorAll("#lab-summary tbody tr")].map((tr) => [...tr.cells].map((c) => c.textContent))`)
	if len(rows) != len(want) {
		t.Fatalf("summary: %d rows, the API has %d runs", len(rows), len(want))
	}
	for i, s := range want {
		if g := fmt.Sprintf("%.1f %%", 100*s["goodput"].(float64)); rows[i][1] != g {
			t.Errorf("summary row %d: goodput %q, want %q", i, rows[i][1], g)
		}
		if r := strconv.FormatFloat(s["rejected"].(float64), 'f', 0, 64); strings.ReplaceAll(rows[i][2], ",", "") != r {
			t.Errorf("summary row %d: refused %q, want %s", i, rows[i][2], r)
		}
	}
}

// checkGrid compares the page's game grid after p periods with the API's:
// which requests are there, what each cell says, how long each took, and
// the requests in work in each period.
func checkGrid(t *testing.T, b *browser, ctx context.Context, g overload.Game, p int, cat map[string]string) {
	t.Helper()
	type cell struct{ Class, Text string }
	rows := evaluate[[][]cell](b, ctx, `[...document.querySelectorAll("#game-grid tbody tr")].map((tr) => [...tr.cells].map((c) => ({class: c.className, text: c.textContent})))`)
	arrived := 0
	for _, r := range g.Requests {
		if r.Arrived <= p {
			arrived++
		}
	}
	if len(rows) != arrived {
		t.Fatalf("%s after %d periods: %d rows, want %d", g.Name, p, len(rows), arrived)
	}
	for i, row := range rows {
		r := g.Requests[i]
		if len(row) != p+2 {
			t.Fatalf("%s, request %d: %d cells, want %d", g.Name, i+1, len(row), p+2)
		}
		for q := 1; q <= p; q++ {
			got := row[q]
			if q < r.Arrived || q-r.Arrived >= len(r.Cells) {
				if got.Text != "" {
					t.Errorf("%s, request %d, period %d: %q, want an empty cell", g.Name, i+1, q, got.Text)
				}
				continue
			}
			c := r.Cells[q-r.Arrived]
			if !strings.HasPrefix(got.Class, c.State) {
				t.Errorf("%s, request %d, period %d: class %q, want %q", g.Name, i+1, q, got.Class, c.State)
			}
			if c.State == "work" {
				if v, err := strconv.ParseFloat(got.Text, 64); err != nil || math.Abs(v-c.Left) > 0.005 {
					t.Errorf("%s, request %d, period %d: %q, want %.2f left", g.Name, i+1, q, got.Text, c.Left)
				}
			} else if got.Text != cat["lab.cell."+c.State] {
				t.Errorf("%s, request %d, period %d: %q, want %q", g.Name, i+1, q, got.Text, cat["lab.cell."+c.State])
			}
		}
		wantTook := ""
		if r.Took > 0 && r.Arrived+r.Took-1 <= p {
			wantTook = strconv.Itoa(r.Took)
		}
		if row[p+1].Text != wantTook {
			t.Errorf("%s, request %d after %d periods: took %q, want %q", g.Name, i+1, p, row[p+1].Text, wantTook)
		}
	}
	inWork := evaluate[[]string](b, ctx, `[...document.querySelectorAll("#game-grid tfoot tr:first-child td")].map((c) => c.textContent)`)
	for q := 1; q <= p; q++ {
		if inWork[q-1] != strconv.Itoa(g.Periods[q-1].Inside) {
			t.Errorf("%s, period %d: %q in work, want %d", g.Name, q, inWork[q-1], g.Periods[q-1].Inside)
		}
	}
}
