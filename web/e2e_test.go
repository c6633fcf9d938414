package web

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// cspWatch records Content-Security-Policy violations, installed before
// the console's own scripts run.
const cspWatch = `window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI));`

// waitReady waits until the console has loaded its catalogue and scenarios.
func waitReady() chromedp.Action[chromedp.Void] {
	return waitFor(`window.afloat && window.afloat.ready === true`)
}

// waitClock waits until the dashboard shows the given time.
func waitClock(clock string) chromedp.Action[chromedp.Void] {
	return waitFor(fmt.Sprintf(`document.getElementById("clock").textContent === %q`, clock))
}

func click(css string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(css)) }

func setValue(css, v string) chromedp.Action[chromedp.Void] {
	return chromedp.SetValue(chromedp.CSS(css), v)
}

// choose sets a select and fires its change event, as a person choosing
// an option does.
func choose(id, v string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		setValue("#"+id, v),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById(%q).dispatchEvent(new Event("change"))`, id)),
	)
}

// press focuses an element and presses Enter on it: the keyboard path.
func press(css string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.Focus(chromedp.CSS(css)), chromedp.KeyEvent(kb.Enter))
}

func dashboard(ctx context.Context, b *browser) map[string]string {
	b.t.Helper()
	return evaluate[map[string]string](b, ctx,
		`Object.fromEntries([...document.querySelectorAll("#dashboard dd")].map((d) => [d.id.replace("metric-", ""), d.textContent]))`)
}

// dashboardRule says how a dashboard figure shows a frame field.
type dashboardRule struct {
	key      string  // frame field
	scale    float64 // display = value × scale
	decimals int
	unit     string // or "unit.…": the catalogue's word for it
}

var dashboardRules = map[string]dashboardRule{
	"burn_1h":         {"burn_1h", 1, 1, " ×"},
	"error_rate":      {"error_rate", 100, 2, " %"},
	"p99":             {"p99_ms", 1, 0, " ms"},
	"requests":        {"requests_per_s", 1, 0, "unit.req_s"},
	"serving":         {"serving", 1, 0, ""},
	"booting":         {"booting", 1, 0, ""},
	"utilization":     {"utilization", 100, 0, " %"},
	"cache_hit":       {"cache_hit", 100, 0, " %"},
	"db_utilization":  {"db_utilization", 100, 0, " %"},
	"shed":            {"shed_share", 100, 0, " %"},
	"fleet_cost":      {"fleet_cost_per_h", 1, 2, "unit.usd_h"},
	"cost_so_far":     {"cost_so_far", 1, 2, " $"},
	"mean_age":        {"mean_age_s", 1, 1, " s"},
	"bad_build":       {"bad_build_share", 100, 0, " %"},
	"recommendations": {"recommendations_available", 100, 0, " %"},
}

// checkDashboard compares every figure on the dashboard with the API's
// frame: the number shown must be the frame's, rounded to what is shown,
// in the unit the language's catalogue gives.
func checkDashboard(t *testing.T, lang string, shown map[string]string, frame map[string]any, minute int) {
	t.Helper()
	if len(shown) != len(dashboardRules) {
		t.Fatalf("minute %d: the dashboard has %d figures, want the spec's 12, the error rate, p99 and the fleet's utilization: %v", minute, len(shown), shown)
	}
	cat := catalogue(t, lang)
	for id, rule := range dashboardRules {
		if strings.HasPrefix(rule.unit, "unit.") {
			rule.unit = " " + cat[rule.unit]
		}
		text, ok := shown[id]
		if !ok {
			t.Fatalf("minute %d: no %s on the dashboard", minute, id)
		}
		if !strings.HasSuffix(text, rule.unit) {
			t.Fatalf("minute %d: %s shows %q, want the unit %q", minute, id, text, rule.unit)
		}
		got, err := strconv.ParseFloat(strings.TrimSuffix(text, rule.unit), 64)
		if err != nil {
			t.Fatalf("minute %d: %s shows %q: %v", minute, id, text, err)
		}
		want := frame[rule.key].(float64) * rule.scale
		if math.Abs(got-want) > 0.5*math.Pow(10, -float64(rule.decimals))+1e-9 {
			t.Fatalf("minute %d: %s shows %q, the API's frame has %v", minute, id, text, want)
		}
	}
}

// apiFrames fetches frames [0, to) of a run from the console's API.
func apiFrames(t *testing.T, base string, q url.Values, to int) []map[string]any {
	t.Helper()
	q.Set("from", "0")
	q.Set("to", strconv.Itoa(to))
	res, err := http.Get(base + "/api/run?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Frames []map[string]any `json:"frames"`
		Error  string           `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/run?%s: %d %v %s", q.Encode(), res.StatusCode, err, body.Error)
	}
	return body.Frames
}

// TestConsoleEndToEnd plays the console in headless Chromium as a new
// user would: the steady scenario's opening minute, a bad deploy rolled
// back from the keyboard with every figure checked against the API, the
// share link in a fresh tab, the debrief, the model page, and the Welsh
// and Tagalog catalogues.
func TestConsoleEndToEnd(t *testing.T) {
	t.Parallel()
	base := startConsole(t)
	b := newBrowser(t)
	ctx := b.ctx
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch}); err != nil {
		t.Fatal(err)
	}

	// A new user opens the console and starts the steady scenario, noise off.
	b.do(ctx, "open the console", chromedp.Navigate(base+"/"), waitReady())
	b.shot(ctx, "01-setup")
	b.do(ctx, "start steady",
		click(`#scenario-steady`),
		setValue(`#seed`, "1"),
		click(`#noise`),
		click(`#start`),
		waitClock("12:00"),
	)
	want := map[string]string{
		"requests": "1125 req/s", "serving": "10", "booting": "0", "cache_hit": "77 %",
		"db_utilization": "19 %", "fleet_cost": "4.00 $/h", "mean_age": "30 s",
		"recommendations": "100 %", "burn_1h": "0.0 ×", "cost_so_far": "0.00 $", "shed": "0 %", "bad_build": "0 %",
	}
	got := dashboard(ctx, b)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("steady opening: %s shows %q, want %q", k, got[k], v)
		}
	}
	b.shot(ctx, "02-steady-opening")

	// A new game: bad deploy, seed 7, stepped minute by minute.
	b.do(ctx, "new game", click(`#new-game`), chromedp.WaitVisible(chromedp.CSS(`#setup`)))
	b.do(ctx, "start bad-deploy seed 7",
		click(`#scenario-bad-deploy`),
		setValue(`#seed`, "7"),
		click(`#noise`), // back on
		click(`#start`),
		waitClock("09:00"),
	)
	run := url.Values{"scenario": {"bad-deploy"}, "seed": {"7"}, "noise": {"1"}}
	plain := apiFrames(t, base, run, 29)
	for m := 1; m <= 28; m++ {
		b.do(ctx, fmt.Sprintf("step to minute %d", m), click(`#step`), waitClock(plain[m]["clock"].(string)))
	}
	checkDashboard(t, "en", dashboard(ctx, b), plain[28], 28)
	b.do(ctx, "wait for the page alert", chromedp.WaitVisible(chromedp.CSS(`#page-alert`)))
	alert := b.text(ctx, `#page-alert`)
	if !strings.Contains(alert, "09:28") || !strings.Contains(alert, "PAGE") {
		t.Errorf("page alert %q, want the page at 09:28", alert)
	}
	b.shot(ctx, "03-bad-deploy-paged")

	// Roll back from the keyboard: the action applies at minute 29.
	b.do(ctx, "press rollback with the keyboard", press(`#control-rollback`))
	run.Set("actions", "29:rollback")
	rolled := apiFrames(t, base, run, 61)
	for m := 29; m <= 40; m++ {
		b.do(ctx, fmt.Sprintf("step to minute %d", m), press(`#step`), waitClock(rolled[m]["clock"].(string)))
		checkDashboard(t, "en", dashboard(ctx, b), rolled[m], m)
	}
	if rolled[34]["bad_build_share"].(float64) != 0 || rolled[33]["bad_build_share"].(float64) != 1 {
		t.Errorf("bad build at 33, 34: %v, %v; want the rollback to switch after 5 minutes", rolled[33]["bad_build_share"], rolled[34]["bad_build_share"])
	}
	b.shot(ctx, "04-bad-deploy-rolled-back")

	// Play at 10× for a while, then pause: the dashboard still matches.
	b.do(ctx, "play at 10×",
		choose("speed", "10"),
		click(`#play`),
		waitFor(`window.afloat.state.shown >= 55`),
		click(`#play`),
	)
	shown := evaluate[int](b, ctx, `window.afloat.state.shown`)
	if shown > 60 {
		t.Fatalf("paused at minute %d, past the frames fetched for the check", shown)
	}
	checkDashboard(t, "en", dashboard(ctx, b), rolled[shown], shown)

	// Share the run and open the link in a fresh tab: the identical run.
	b.do(ctx, "share", click(`#share`), chromedp.WaitVisible(chromedp.CSS(`#share-link`)))
	link := evaluate[string](b, ctx, `document.getElementById("share-link").value`)
	if !strings.Contains(link, "actions=29%3Arollback") || !strings.Contains(link, fmt.Sprintf("at=%d", shown+1)) {
		t.Errorf("share link %s does not carry the rollback and the minute", link)
	}
	first := evaluate[string](b, ctx, fmt.Sprintf(`JSON.stringify(window.afloat.state.frames.slice(0, %d))`, shown+1))
	firstDash := dashboard(ctx, b)
	tab := b.newTab()
	b.do(tab, "open the share link", chromedp.Navigate(link), waitReady(), waitClock(rolled[shown]["clock"].(string)))
	second := evaluate[string](b, tab, fmt.Sprintf(`JSON.stringify(window.afloat.state.frames.slice(0, %d))`, shown+1))
	if first != second {
		t.Error("the share link replayed a different run")
	}
	if d := dashboard(tab, b); fmt.Sprint(d) != fmt.Sprint(firstDash) {
		t.Errorf("shared tab dashboard %v, want %v", d, firstDash)
	}
	if !evaluate[bool](b, tab, `!document.getElementById("replay").hidden`) {
		t.Error("the shared tab does not say it is a replay")
	}
	b.shot(tab, "05-shared-link")
	// The viewer forks it at minute 20 and plays on.
	b.do(tab, "fork at 20",
		setValue(`#fork-minute`, "20"),
		click(`#fork`),
		waitClock("09:20"),
		click(`#step`),
		waitClock("09:21"),
	)
	if forked := evaluate[int](b, tab, `window.afloat.state.actions.length`); forked != 0 {
		t.Errorf("after a fork at minute 20 the run keeps %d actions from minute 29", forked)
	}

	// The debrief and the model page of the first tab's run.
	b.do(ctx, "open the debrief", chromedp.Navigate(link+"#debrief"), waitReady(), chromedp.WaitVisible(chromedp.CSS(`#debrief-figures div`)))
	figures := evaluate[map[string]string](b, ctx,
		`Object.fromEntries([...document.querySelectorAll("#debrief-figures div")].map((d) => [d.dataset.figure, d.querySelector("dd").textContent]))`)
	for _, id := range []string{"budget_left", "worst_burn_1h", "worst_burn", "minutes_over_slo", "minutes_p99_over_1s", "paged", "total_cost", "mean_age", "shed", "no_recommendations", "bad_build"} {
		if figures[id] == "" {
			t.Errorf("the debrief has no %s: %v", id, figures)
		}
	}
	timeline := b.text(ctx, `#timeline`)
	if !strings.Contains(timeline, "09:28") || !strings.Contains(timeline, "09:29") || !strings.Contains(timeline, "Rollback") {
		t.Errorf("timeline %q does not show the page at 09:28 and the rollback at 09:29", timeline)
	}
	b.shot(ctx, "06-debrief")
	b.do(ctx, "open the model page", chromedp.Navigate(link+"#model"), waitReady(), chromedp.WaitVisible(chromedp.CSS(`#formulas li`)))
	hit := b.text(ctx, `#formulas li[data-formula="cache_hit"] .values`)
	if !strings.HasPrefix(hit, "hit = ") || !strings.Contains(hit, "/(1 + ") {
		t.Errorf("cache hit formula with values %q", hit)
	}
	b.shot(ctx, "07-model")

	// Every view in Welsh, Tagalog and English again (Welsh alone in make
	// test): no key missing, no raw key shown.
	rawKey := regexp.MustCompile(`^[a-z_]+(\.[a-z0-9_-]+)+$`)
	for _, lang := range someLanguages(testing.Short(), "cy", "tl", "en") {
		// The lab's views in every language are TestOverloadLabEndToEnd's.
		for _, view := range []string{"play", "debrief", "model"} {
			b.do(ctx, "switch language", chromedp.Navigate(link+"#"+view), waitReady(),
				choose("lang", lang),
				waitFor(fmt.Sprintf(`document.documentElement.lang === %q`, lang)),
			)
			switch view {
			case "debrief":
				b.do(ctx, "debrief rendered", chromedp.WaitVisible(chromedp.CSS(`#debrief-figures div`)))
			}
			missing := evaluate[[]string](b, ctx, `[...window.afloat.missing]`)
			texts := evaluate[[]string](b, ctx, `(() => { const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT); const out = []; while (w.nextNode()) { const s = w.currentNode.textContent.trim(); if (s) out.push(s); } return out; })()`)
			if len(missing) > 0 {
				t.Errorf("%s, %s view: keys missing from the catalogue: %v", lang, view, missing)
			}
			for _, s := range texts {
				if rawKey.MatchString(s) {
					t.Errorf("%s, %s view: a raw key is shown: %q", lang, view, s)
				}
			}
			if lang != "en" {
				b.shot(ctx, fmt.Sprintf("09-%s-%s", lang, view))
			}
			// axe-core on every view with the game's data tables open, in
			// English: every view in every language is
			// TestGameAccessibilityEndToEnd's.
			if lang == "en" {
				b.do(ctx, "open the data tables", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll("main details")]
  .filter((d) => !d.closest("#lab")).forEach((d) => (d.open = true))`))
				b.do(ctx, "settle", waitSettled())
				b.checkAxe(ctx, lang+": "+view)
			}
		}
	}

	if csp := evaluate[[]string](b, ctx, `window.__csp || []`); len(csp) > 0 {
		t.Errorf("Content-Security-Policy violations: %v", csp)
	}
	b.noProblems()
}
