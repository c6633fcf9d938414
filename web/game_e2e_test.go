package web

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/afloat/afloat/sim"
	"github.com/afloat/afloat/sim/bots"
)

var docsScreenshots = flag.Bool("docs-screenshots", false, "write the layout screenshots to docs/screenshots (the README and docs/guide.md show them)")

// displayScale is how the page shows a lever: percentages for the target
// and shedding.
var displayScale = map[sim.Control]float64{sim.ControlTargetUtilization: 100, sim.ControlShedLowPriority: 100}

// typeInto types text into a field as a person does — select what is
// there, type, press Enter — so that the page sees input and change.
func typeInto(css, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(typeOver(css, text), chromedp.KeyEvent(kb.Enter))
}

// typeOver types text over what a field holds, without committing it.
func typeOver(css, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Focus(chromedp.CSS(css)),
		chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.KeyEvent(text),
	)
}

// display writes a lever's value in the units the page shows.
func display(a sim.Action) string {
	scale := displayScale[a.Control]
	if scale == 0 {
		scale = 1
	}
	return strconv.FormatFloat(math.Round(a.Value*scale*1e6)/1e6, 'f', -1, 64)
}

// fill fills a catalogue message's {placeholders}.
func fill[V any](msg string, vars map[string]V) string {
	for k, v := range vars {
		msg = strings.ReplaceAll(msg, "{"+k+"}", fmt.Sprint(v))
	}
	return msg
}

// startGameAs opens the console in a language and starts a scenario from
// the setup form.
func startGameAs(b *browser, ctx context.Context, base, lang, scenario string, seed int, difficulty string, noise bool) {
	b.t.Helper()
	b.do(ctx, "open the console in "+lang, chromedp.Navigate(base+"/?lang="+lang+"#play"), waitReady())
	if evaluate[bool](b, ctx, `!document.getElementById("game").hidden`) {
		b.do(ctx, "new game", click(`#new-game`), chromedp.WaitVisible(chromedp.CSS(`#setup`)))
	}
	steps := []chromedp.Action[chromedp.Void]{
		click(`#scenario-` + scenario),
		click(`#difficulty-` + difficulty),
		typeOver(`#seed`, strconv.Itoa(seed)),
	}
	if evaluate[bool](b, ctx, `document.getElementById("noise").checked`) != noise {
		steps = append(steps, click(`#noise`))
	}
	steps = append(steps, click(`#start`), waitFor(`window.afloat.state.shown === 0 && !document.getElementById("game").hidden`))
	b.do(ctx, fmt.Sprintf("start %s seed %d (%s, %s)", scenario, seed, difficulty, lang), steps...)
}

// stepTo steps the game with its Step button until the dashboard shows
// the minute.
func stepTo(b *browser, ctx context.Context, minute int) {
	b.t.Helper()
	got := evaluateAsync[int](b, ctx, fmt.Sprintf(`(async (target) => {
  const s = window.afloat.state;
  while (s.shown < target && !s.over) {
    const before = s.shown;
    document.getElementById("step").click();
    while (s.shown === before) await new Promise((r) => setTimeout(r, 1));
  }
  return s.shown;
})(%d)`, minute))
	if got != minute {
		b.t.Fatalf("stepped to minute %d, want %d", got, minute)
	}
}

// stepToEnd steps the game until it is over and returns the last minute
// shown.
func stepToEnd(b *browser, ctx context.Context) int {
	b.t.Helper()
	return evaluateAsync[int](b, ctx, `(async () => {
  const s = window.afloat.state;
  while (!s.over) {
    const before = s.shown;
    document.getElementById("step").click();
    while (s.shown === before && !s.over) await new Promise((r) => setTimeout(r, 1));
  }
  return s.shown;
})()`)
}

// pageActions is the run's action list as the page holds it.
func pageActions(b *browser, ctx context.Context) []sim.Action {
	b.t.Helper()
	raw := evaluate[string](b, ctx, `JSON.stringify(window.afloat.state.actions)`)
	var acts []sim.Action
	if err := json.Unmarshal([]byte(raw), &acts); err != nil {
		b.t.Fatalf("the page's actions %s: %v", raw, err)
	}
	return acts
}

// operate makes an action through the levers: typing the value, ticking
// the switch, pressing the button.
func operate(b *browser, ctx context.Context, a sim.Action) {
	b.t.Helper()
	spec, _ := sim.LookupControl(a.Control)
	css := "#control-" + string(a.Control)
	switch spec.Kind {
	case sim.KindPress:
		b.do(ctx, "press "+string(a.Control), click(css))
	case sim.KindBool:
		if evaluate[bool](b, ctx, fmt.Sprintf(`document.querySelector(%q).checked`, css)) != a.Bool() {
			b.do(ctx, "switch "+string(a.Control), click(css))
		}
	default:
		b.do(ctx, fmt.Sprintf("type %s into %s", display(a), a.Control), typeInto(css, display(a)))
	}
}

func postJSON(t *testing.T, url string, body any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(body)
	res, err := http.Post(url, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != 200 {
		t.Fatalf("POST %s %s: %d %v %v", url, raw, res.StatusCode, err, out)
	}
	return out
}

func framesOf(t *testing.T, base string, cfg sim.Config, to int) []map[string]any {
	t.Helper()
	return apiFrames(t, base, cfg.Query(), to)
}

// TestLeversEndToEnd types a valid and an invalid value into every
// numeric lever and toggles every switch and presses every button, in
// English, Welsh and Tagalog, reading the page's messages in each; each
// queued action is checked against the API's next frame.
func TestLeversEndToEnd(t *testing.T) {
	t.Parallel()
	base := startConsole(t)
	b := newBrowser(t)
	ctx := b.ctx
	specs := sim.ControlSpecs()
	// make test (-short) types in Tagalog; make test-long in English and
	// Welsh too.
	for _, lang := range someLanguages(testing.Short(), "tl", "en", "cy") {
		cat := catalogue(t, lang)
		startGameAs(b, ctx, base, lang, "steady", 1, "training", false)
		var want []sim.Action
		valid := map[sim.Control]float64{
			sim.ControlFleetFloor: 12, sim.ControlTargetUtilization: 0.45, sim.ControlCacheTTL: 90, sim.ControlShedLowPriority: 0.5,
		}
		for _, spec := range specs {
			css := "#control-" + string(spec.Control)
			switch spec.Kind {
			case sim.KindInteger, sim.KindNumber:
				// Out of range: the message names the lever and its range, in
				// the language, and nothing is queued.
				bad := sim.Set(1, spec.Control, spec.Max+1/displayScaleOf(spec.Control))
				if spec.Control == sim.ControlCacheTTL {
					bad.Value = 0
				}
				b.do(ctx, "an invalid "+string(spec.Control), typeInto(css, display(bad)))
				scale := displayScaleOf(spec.Control)
				msg := fill(cat["control.error.range"], map[string]string{
					"label": cat["control."+string(spec.Control)+".label"],
					"min":   strconv.FormatFloat(spec.Min*scale, 'f', -1, 64),
					"max":   strconv.FormatFloat(spec.Max*scale, 'f', -1, 64),
				})
				if got := b.text(ctx, "#error-"+string(spec.Control)); got != msg {
					t.Errorf("%s: typing %s into %s says %q, want %q", lang, display(bad), spec.Control, got, msg)
				}
				if evaluate[string](b, ctx, fmt.Sprintf(`document.querySelector(%q).getAttribute("aria-invalid")`, css)) != "true" {
					t.Errorf("%s: %s is not marked invalid", lang, spec.Control)
				}
				if acts := pageActions(b, ctx); len(acts) != len(want) {
					t.Errorf("%s: an invalid %s was queued: %v", lang, spec.Control, acts)
				}
				// In range: the message goes, the move is queued for 12:01.
				a := sim.Set(1, spec.Control, valid[spec.Control])
				b.do(ctx, "a valid "+string(spec.Control), typeInto(css, display(a)))
				if got := b.text(ctx, "#error-"+string(spec.Control)); got != "" {
					t.Errorf("%s: a valid %s still says %q", lang, spec.Control, got)
				}
				want = append(want, a)
			case sim.KindBool:
				b.do(ctx, "switch "+string(spec.Control), click(css))
				want = append(want, sim.Switch(1, spec.Control, false))
			case sim.KindPress:
				b.do(ctx, "press "+string(spec.Control), click(css))
				want = append(want, sim.Press(1, spec.Control))
			}
			pendingMsg := fill(cat["pending"], map[string]string{"clock": "12:01"})
			if got := b.text(ctx, "#pending-"+string(spec.Control)); got != pendingMsg {
				t.Errorf("%s: %s's pending note %q, want %q", lang, spec.Control, got, pendingMsg)
			}
		}
		if got := pageActions(b, ctx); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: the page queued %v, want %v", lang, got, want)
		}
		// The next frame, from the API with the actions typed: every lever
		// in it, and on the dashboard.
		b.do(ctx, "step with n", chromedp.KeyEvent("n"), waitClock("12:01"))
		frames := framesOf(t, base, sim.Config{Scenario: "steady", Seed: 1, Actions: want}, 2)
		f := frames[1]
		if f["fleet_floor"] != 12.0 || f["autoscaling"] != false || f["target_utilization"] != 0.45 || f["cache_ttl_s"] != 90.0 ||
			f["shed_low_priority"] != 0.5 || f["heavy_feature"] != false || f["warmup_minutes_left"] != 6.0 || f["rollback_minutes_left"] != 5.0 {
			t.Errorf("%s: the API's minute 1 has the levers %v", lang, f)
		}
		checkDashboard(t, lang, dashboard(ctx, b), f, 1)
		shown := evaluate[map[string]any](b, ctx, `Object.fromEntries([...document.querySelectorAll("#controls input")].map((e) => [e.id, e.type === "checkbox" ? e.checked : Number(e.value)]))`)
		if shown["control-fleet_floor"] != 12.0 || shown["control-target_utilization"] != 45.0 || shown["control-autoscaling"] != false || shown["control-heavy_feature"] != false {
			t.Errorf("%s: the levers show %v after the minute", lang, shown)
		}
		// The switches back on: the frame after has them on.
		b.do(ctx, "switches back on", click(`#control-autoscaling`), click(`#control-heavy_feature`), chromedp.KeyEvent("n"), waitClock("12:02"))
		want = append(want, sim.Switch(2, sim.ControlAutoscaling, true), sim.Switch(2, sim.ControlHeavyFeature, true))
		if got := pageActions(b, ctx); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: the page's actions %v, want %v", lang, got, want)
		}
		f = framesOf(t, base, sim.Config{Scenario: "steady", Seed: 1, Actions: want}, 3)[2]
		if f["autoscaling"] != true || f["heavy_feature"] != true {
			t.Errorf("%s: minute 2 has autoscaling %v, heavy feature %v", lang, f["autoscaling"], f["heavy_feature"])
		}
		checkDashboard(t, lang, dashboard(ctx, b), f, 2)
		if missing := evaluate[[]string](b, ctx, `[...window.afloat.missing]`); len(missing) > 0 {
			t.Errorf("%s: keys missing from the catalogue: %v", lang, missing)
		}
	}
	b.noProblems()
}

func displayScaleOf(c sim.Control) float64 {
	if s := displayScale[c]; s != 0 {
		return s
	}
	return 1
}

// TestBotsPlayTheGameEndToEnd plays each scenario to its end in the page,
// making a bot's moves through the levers at the bot's minutes, and checks
// the score and the stars the debrief shows against /api/debrief; the
// levers are off once the game is over.
func TestBotsPlayTheGameEndToEnd(t *testing.T) {
	t.Parallel()
	base := startConsole(t)
	b := newBrowser(t)
	ctx := b.ctx
	for i, c := range []struct {
		scenario, bot, difficulty string
		seed                      int
	}{
		{"bad-deploy", bots.BotRunbook, "training", 5},
		{"surge", bots.BotExpert, "realistic", 11},
		{"cache-flush", bots.BotExpert, "training", 3},
		{"steady", bots.BotRunbook, "realistic", 2},
	} {
		if testing.Short() && i >= 2 {
			break // make test plays two games; make test-long all four
		}
		lang := []string{"en", "cy", "tl", "en"}[i]
		cfg := sim.Config{Scenario: c.scenario, Seed: uint32(c.seed), Noise: true}
		played := postJSON(t, base+"/api/bot", map[string]any{"scenario": c.scenario, "seed": c.seed, "bot": c.bot})
		var acts []sim.Action
		raw, _ := json.Marshal(played["actions"])
		if err := json.Unmarshal(raw, &acts); err != nil || len(acts) == 0 {
			t.Fatalf("%s: the %s's actions %s: %v", c.scenario, c.bot, raw, err)
		}
		startGameAs(b, ctx, base, lang, c.scenario, c.seed, c.difficulty, true)
		sc, _ := sim.Lookup(c.scenario)
		for _, a := range acts {
			stepTo(b, ctx, a.Minute-1)
			operate(b, ctx, a)
		}
		stepTo(b, ctx, sc.Minutes-1)
		got := pageActions(b, ctx)
		byMinute := func(x []sim.Action) []sim.Action {
			out := slices.Clone(x)
			slices.SortStableFunc(out, func(a, b sim.Action) int {
				if a.Minute != b.Minute {
					return a.Minute - b.Minute
				}
				return strings.Compare(string(a.Control), string(b.Control))
			})
			return out
		}
		if fmt.Sprint(byMinute(got)) != fmt.Sprint(byMinute(acts)) {
			t.Fatalf("%s: the page played %v, the %s %v", c.scenario, got, c.bot, acts)
		}
		// The game is over: the debrief with the coach, the levers off.
		b.do(ctx, "the debrief of "+c.scenario, waitFor(`location.hash === "#debrief" && document.getElementById("grade").dataset.stars !== undefined`))
		cfg.Actions = acts
		api := postJSON(t, base+"/api/debrief", map[string]any{
			"scenario": c.scenario, "seed": c.seed, "actions": acts, "coach": true,
		})
		points := api["score"].(map[string]any)["points"].(float64)
		stars := api["coach"].(map[string]any)["grade"].(map[string]any)["stars"].(float64)
		if got := evaluate[string](b, ctx, `document.getElementById("grade").dataset.stars`); got != strconv.Itoa(int(stars)) {
			t.Errorf("%s: the page shows %s stars, /api/debrief %v", c.scenario, got, stars)
		}
		line := b.text(ctx, "#score-line")
		if wantPoints := strconv.FormatFloat(points, 'f', 1, 64); !strings.Contains(strings.ReplaceAll(line, ",", ""), wantPoints) {
			t.Errorf("%s: the score line %q does not show /api/debrief's %s points", c.scenario, line, wantPoints)
		}
		if c.bot == bots.BotExpert && int(stars) != 3 {
			t.Errorf("%s: the expert's own run earned %v stars", c.scenario, stars)
		}
		total := evaluate[string](b, ctx, `document.querySelector('#score-table tr[data-part="total"] td:last-child').textContent`)
		if strings.ReplaceAll(total, ",", "") != strconv.FormatFloat(points, 'f', 1, 64) {
			t.Errorf("%s: the score table's total %q, /api/debrief %v", c.scenario, total, points)
		}
		b.shot(ctx, "bots-"+c.scenario+"-debrief")
		if n := evaluate[int](b, ctx, `[...document.querySelectorAll("#controls input, #controls button, #play, #step")].filter((e) => !e.disabled).length`); n != 0 {
			t.Errorf("%s: %d levers or buttons are on after the game's end", c.scenario, n)
		}
	}
	b.noProblems()
}

// TestPlayFeelEndToEnd: the page pauses the game and flashes the title;
// the keyboard plays it; a reload resumes a run, and so does the next
// visit; a shared run can be watched from minute 0 and taken over; the
// realistic mode hides the bad build.
func TestPlayFeelEndToEnd(t *testing.T) {
	t.Parallel()
	base := startConsole(t)
	b := newBrowser(t)
	ctx := b.ctx
	startGameAs(b, ctx, base, "en", "bad-deploy", 7, "training", true)
	b.do(ctx, "play at 10× until the page",
		choose("speed", "10"),
		click(`#play`),
		waitFor(`!window.afloat.state.playing`),
	)
	if shown := evaluate[int](b, ctx, `window.afloat.state.shown`); shown != 28 {
		t.Errorf("the game paused at minute %d, want 28, the page", shown)
	}
	b.do(ctx, "the title flashes", waitFor(`document.title.includes("PAGE 09:28")`), waitFor(`!document.title.includes("PAGE")`))
	if hint := b.text(ctx, "#hint"); !strings.Contains(hint, "roll the deploy back") {
		t.Errorf("the training hint at the page says %q", hint)
	}
	// The keyboard: n steps, space plays and pauses, ? opens the help.
	b.do(ctx, "n steps", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`), chromedp.KeyEvent("n"), waitClock("09:29"))
	b.do(ctx, "space plays", chromedp.KeyEvent(" "), waitFor(`window.afloat.state.playing`), chromedp.KeyEvent(" "), waitFor(`!window.afloat.state.playing`))
	b.do(ctx, "? opens the help", chromedp.KeyEvent("?"), waitFor(`document.getElementById("help-dialog").open`))
	b.shot(ctx, "feel-help")
	b.checkAxe(ctx, "help dialog")
	b.do(ctx, "Escape closes it", chromedp.KeyEvent(kb.Escape), waitFor(`!document.getElementById("help-dialog").open`))

	// A reload resumes the run: the same minute, actions and dashboard.
	shown := evaluate[int](b, ctx, `window.afloat.state.shown`)
	b.do(ctx, "roll back", press(`#control-rollback`))
	stepTo(b, ctx, shown+3)
	before := dashboard(ctx, b)
	acts := pageActions(b, ctx)
	url := evaluate[string](b, ctx, `location.href`)
	b.do(ctx, "reload", chromedp.Reload(), waitReady(), waitFor(fmt.Sprintf(`window.afloat.state.shown === %d`, shown+3)))
	if after := dashboard(ctx, b); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("after a reload the dashboard shows %v, want %v", after, before)
	}
	if got := pageActions(b, ctx); fmt.Sprint(got) != fmt.Sprint(acts) || evaluate[string](b, ctx, `location.href`) != url {
		t.Errorf("after a reload: actions %v at %s, want %v at %s", got, evaluate[string](b, ctx, `location.href`), acts, url)
	}
	// The next visit offers it, and resumes it.
	b.do(ctx, "visit again", chromedp.Navigate(base+"/"), waitReady(), chromedp.WaitVisible(chromedp.CSS(`#resume`)),
		click(`#resume-run`), waitFor(fmt.Sprintf(`window.afloat.state.shown === %d`, shown+3)))
	if got := pageActions(b, ctx); fmt.Sprint(got) != fmt.Sprint(acts) {
		t.Errorf("resumed with %v, want %v", got, acts)
	}

	// A shared run: watched from minute 0, its levers locked, then taken
	// over.
	b.do(ctx, "share", click(`#share`), chromedp.WaitVisible(chromedp.CSS(`#share-link`)))
	link := evaluate[string](b, ctx, `document.getElementById("share-link").value`)
	tab := b.newTab()
	b.do(tab, "open the shared run", chromedp.Navigate(link), waitReady(), chromedp.WaitVisible(chromedp.CSS(`#replay`)))
	b.do(tab, "watch it from the start", choose("speed", "10"), click(`#watch`), waitFor(`window.afloat.state.watching && window.afloat.state.shown >= 3`))
	if n := evaluate[int](b, tab, `[...document.querySelectorAll("#controls input, #controls button")].filter((e) => !e.disabled).length`); n != 0 {
		t.Errorf("%d levers are on while a shared run plays back", n)
	}
	b.do(tab, "take over", click(`#take-over`), waitFor(`!window.afloat.state.watching && !window.afloat.state.playing`))
	if n := evaluate[int](b, tab, `[...document.querySelectorAll("#controls input")].filter((e) => e.disabled).length`); n != 0 {
		t.Errorf("%d levers are off after taking over", n)
	}

	// The realistic mode: no bad build on the dashboard, a deploy marker.
	startGameAs(b, ctx, base, "en", "bad-deploy", 7, "realistic", true)
	stepTo(b, ctx, 12)
	d := dashboard(ctx, b)
	if _, ok := d["bad_build"]; ok || d["deploy"] != "09:10" {
		t.Errorf("the realistic dashboard %v: want no bad build, the deploy at 09:10", d)
	}
	if evaluate[bool](b, ctx, `!document.getElementById("hint").hidden`) {
		t.Error("the realistic mode gives hints")
	}
	b.noProblems()
}

// layoutCheck lists what must be on screen without scrolling, and where
// it is not.
const layoutCheck = `(() => {
  const narrow = window.innerWidth <= 700;
  const must = [document.getElementById("clock"), document.getElementById("page-alert"), document.getElementById("play")];
  must.push(...document.querySelectorAll(narrow ? "#dashboard .tile:not(.extra)" : "#dashboard .tile"));
  must.push(...document.querySelectorAll("#controls .control"));
  if (!narrow) must.push(...[...document.querySelectorAll("#charts figure.chart")].slice(0, 2));
  const out = [];
  for (const el of must) {
    const r = el.getBoundingClientRect();
    if (r.height === 0 || r.bottom > window.innerHeight + 0.5 || r.right > window.innerWidth + 0.5 || r.top < 0)
      out.push((el.id || el.dataset.metric || el.dataset.control || el.className) + " at " + Math.round(r.bottom) + "/" + window.innerHeight);
  }
  if (narrow && document.querySelector("#charts .chart-tabs").getAttribute("role") !== "tablist") out.push("charts are not tabs");
  return out;
})()`

// TestLayoutEndToEnd: at 1366×768 and 1920×1080 the clock, the page, the
// twelve figures, the levers and the two key charts are on screen without
// scrolling; at 390×844 the clock, the page, the key figures and the
// levers are, and the charts are tabs. At 1366×768, in every language,
// the setup's Start is on screen and no tile's label overflows. It takes the screenshots docs/guide.md
// shows (go test ./web -run TestLayoutEndToEnd -docs-screenshots writes
// them to docs/screenshots).
func TestLayoutEndToEnd(t *testing.T) {
	t.Parallel()
	base := startConsole(t)
	b := newBrowser(t)
	ctx := b.ctx
	for _, size := range []struct{ w, h int64 }{{1366, 768}, {1920, 1080}, {390, 844}} {
		name := fmt.Sprintf("%dx%d", size.w, size.h)
		b.do(ctx, "size "+name, chromedp.EmulateViewport(size.w, size.h, chromedp.EmulateScale(1)))
		startGameAs(b, ctx, base, "en", "bad-deploy", 7, "training", true)
		stepTo(b, ctx, 28)
		b.do(ctx, "settle", waitSettled(), chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
		if off := evaluate[[]string](b, ctx, layoutCheck); len(off) > 0 {
			t.Errorf("%s: below the fold or off screen: %v", name, off)
		}
		b.checkAxe(ctx, "the game at "+name)
		png := b.viewportShot(ctx, "layout-game-"+name)
		if *docsScreenshots && png != nil {
			if err := os.WriteFile(filepath.Join("..", "docs", "screenshots", "game-"+name+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// At a laptop's 1366×768, in every language (English alone under
	// -short): Start is on screen on the setup page, however long the
	// briefings; and no tile's label runs out of its tile, a warning's
	// flag beside it included (a cache flush, a minute after the page).
	langs := []string{"en", "cy", "tl"}
	if testing.Short() {
		langs = langs[:1]
	}
	b.do(ctx, "size 1366x768", chromedp.EmulateViewport(1366, 768, chromedp.EmulateScale(1)))
	for _, lang := range langs {
		b.do(ctx, lang+": the setup", chromedp.Navigate(base+"/?lang="+lang+"#play"), waitReady(), waitSettled(),
			chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
		if bottom := evaluate[float64](b, ctx, `document.getElementById("start").getBoundingClientRect().bottom`); bottom > 768.5 {
			t.Errorf("%s: at 1366x768 Start ends at %.0f px, below the fold", lang, bottom)
		}
		startGameAs(b, ctx, base, lang, "cache-flush", 7, "realistic", true)
		stepTo(b, ctx, 16)
		b.do(ctx, lang+": settle", waitSettled())
		if over := evaluate[[]string](b, ctx, `[...document.querySelectorAll("#dashboard .tile, #dashboard .tile *")]
			.filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.textContent)`); len(over) > 0 {
			t.Errorf("%s: at 1366x768 these run out of their tile: %q", lang, over)
		}
	}
	// The debrief at the end of a game, for docs/guide.md.
	b.do(ctx, "size 1366x768", chromedp.EmulateViewport(1366, 768, chromedp.EmulateScale(1)))
	cfg := sim.Config{Scenario: "bad-deploy", Seed: 7, Noise: true, Actions: []sim.Action{sim.Press(29, sim.ControlRollback)}}
	b.do(ctx, "the debrief", chromedp.Navigate(base+"/?"+cfg.Query().Encode()+"&at=120&mode=training#debrief"), waitReady(),
		waitFor(`document.getElementById("grade").dataset.stars !== undefined`), waitSettled())
	png := b.viewportShot(ctx, "layout-debrief-1366x768")
	// On a phone the score table's points column is on screen.
	b.do(ctx, "the debrief on a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(1)), waitSettled())
	if right := evaluate[float64](b, ctx, `Math.max(...[...document.querySelectorAll("#score-table tr > :last-child")].map((c) => c.getBoundingClientRect().right))`); right > 390.5 {
		t.Errorf("on a phone the score's points column ends at %.0f px, past the screen's 390", right)
	}
	b.do(ctx, "size 1366x768 again", chromedp.EmulateViewport(1366, 768, chromedp.EmulateScale(1)))
	if *docsScreenshots && png != nil {
		if err := os.WriteFile(filepath.Join("..", "docs", "screenshots", "debrief-1366x768.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b.noProblems()
}

// viewportShot saves what the window shows as NAME.png and returns it,
// when screenshots are asked for (-screenshots or -docs-screenshots).
func (b *browser) viewportShot(ctx context.Context, name string) []byte {
	b.t.Helper()
	if *screenshotDir == "" && !*docsScreenshots {
		return nil
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return nil
	}
	if err := os.WriteFile(filepath.Join(b.shotDir(), name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	return png
}

// TestGameAccessibilityEndToEnd runs axe-core on every state of the game,
// the debrief and the model in English, Welsh and Tagalog: the setup, a
// paged minute with its hint, the share box, the realistic mode, a game
// lost (the budget gone), the debrief with the coach, the model, and a
// phone's layout with its chart tabs; and on the assignment lab and the
// global quota lab with its data tables open. (The overload lab is
// checked in TestConsoleEndToEnd and TestOverloadLabEndToEnd.)
//
// It walks every state in English (and in make test-long, without -short,
// in Welsh and Tagalog too, checking that no catalogue key is missing in
// each); axe runs on each state in English, and in Welsh and Tagalog in
// make test-long: a language
// changes the words, not the page's structure or colours, and axe's runs
// are most of this test's cost.
func TestGameAccessibilityEndToEnd(t *testing.T) {
	t.Parallel()
	everyLanguage := !testing.Short()
	base := startConsole(t)
	b := newBrowser(t)
	ctx := b.ctx
	lost := sim.Config{Scenario: "bad-deploy", Seed: 4, Noise: true, Actions: []sim.Action{
		sim.Switch(1, sim.ControlAutoscaling, false), sim.Set(1, sim.ControlFleetFloor, 1),
	}}
	minor := 0
	axe := func(lang, where string) int {
		t.Helper()
		if lang != "en" && !everyLanguage {
			return 0
		}
		return b.checkAxe(ctx, lang+": "+where)
	}
	for _, lang := range someLanguages(testing.Short(), "en", "cy", "tl") {
		b.do(ctx, "setup", chromedp.Navigate(base+"/?lang="+lang), waitReady(), waitSettled())
		minor += axe(lang, "setup")
		startGameAs(b, ctx, base, lang, "bad-deploy", 7, "training", true)
		stepTo(b, ctx, 28)
		b.do(ctx, "share box", click(`#share`), waitSettled())
		minor += axe(lang, "paged, hint, share box")
		b.do(ctx, "chart tables", chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("#charts details").forEach((d) => (d.open = true))`), waitSettled())
		minor += axe(lang, "chart data tables open")
		b.do(ctx, "debrief so far", chromedp.Navigate(base+"/?lang="+lang+"&"+strings.TrimPrefix(evaluate[string](b, ctx, `location.search`), "?")+"#debrief"),
			waitReady(), chromedp.WaitVisible(chromedp.CSS(`#debrief-figures div`)), waitSettled())
		minor += axe(lang, "debrief mid-game")
		b.do(ctx, "model", chromedp.Navigate(base+"/?lang="+lang+"#model"), waitReady(), chromedp.WaitVisible(chromedp.CSS(`#formulas li`)), waitSettled())
		minor += axe(lang, "model")

		startGameAs(b, ctx, base, lang, "cache-flush", 2, "realistic", true)
		stepTo(b, ctx, 16)
		minor += axe(lang, "realistic, cache flushed")

		// A game lost: the budget gone, the levers off, the debrief with
		// the coach.
		b.do(ctx, "a lost game", chromedp.Navigate(base+"/?lang="+lang+"&"+lost.Query().Encode()+"&mode=training#play"), waitReady())
		stepToEnd(b, ctx)
		b.do(ctx, "its debrief", waitFor(`location.hash === "#debrief" && document.getElementById("grade").dataset.stars !== undefined`), waitSettled())
		if stars := evaluate[string](b, ctx, `document.getElementById("grade").dataset.stars`); stars != "0" {
			t.Errorf("%s: a game that lost the month's budget has %s stars", lang, stars)
		}
		if !evaluate[bool](b, ctx, `!document.getElementById("failed-note").hidden`) {
			t.Errorf("%s: the debrief of a lost game does not say so", lang)
		}
		minor += axe(lang, "debrief of a lost game, with the coach")
		b.do(ctx, "the game over", chromedp.Navigate(base+"/?lang="+lang+"&"+lost.Query().Encode()+"&at=120&mode=training#play"), waitReady(), waitSettled())
		if !evaluate[bool](b, ctx, `document.getElementById("page-alert").classList.contains("over") && document.getElementById("control-fleet_floor").disabled`) {
			t.Errorf("%s: a lost game does not say game over, or leaves the levers on", lang)
		}
		minor += axe(lang, "game over")

		b.do(ctx, "phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(1)))
		startGameAs(b, ctx, base, lang, "surge", 3, "training", true)
		stepTo(b, ctx, 5)
		b.do(ctx, "a chart tab", chromedp.Focus(chromedp.CSS(`.chart-tabs [aria-selected="true"]`)), chromedp.KeyEvent(kb.ArrowRight), waitSettled())
		if sel := evaluate[int](b, ctx, `[...document.querySelectorAll("#charts .chart-panel")].filter((p) => !p.hidden).length`); sel != 1 {
			t.Errorf("%s: the phone shows %d charts at once, want one tab", lang, sel)
		}
		minor += axe(lang, "phone")
		b.do(ctx, "desktop", chromedp.EmulateViewport(1400, 1000, chromedp.EmulateScale(1)))

		b.do(ctx, "assignment lab", chromedp.Navigate(base+"/?lang="+lang+"#assign"), waitReady(),
			waitFor(`document.querySelectorAll("#assign-table tbody tr").length > 0`), waitSettled())
		minor += axe(lang, "assignment lab")
		b.do(ctx, "global quota lab", chromedp.Navigate(base+"/?lang="+lang+"#quota"), waitReady(),
			waitFor(`!!window.afloat.quota && !!window.afloat.quota.resp && !window.afloat.quota.busy`), waitSettled())
		b.do(ctx, "its data tables", chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("#quota details").forEach((d) => (d.open = true))`), waitSettled())
		minor += axe(lang, "global quota lab, data tables open")
		if missing := evaluate[[]string](b, ctx, `[...window.afloat.missing]`); len(missing) > 0 {
			t.Errorf("%s: keys missing from the catalogue: %v", lang, missing)
		}
	}
	t.Logf("axe: no serious or critical violation expected; %d moderate or minor ones over all states", minor)
	b.noProblems()
}

// negativeNumber finds a number shown below zero ("−0.8 %", "-255.5").
const negativeNumber = `(ids) => ids.map((id) => document.getElementById(id).textContent).filter((s) => /[−-]\s*\d/.test(s))`

// TestRunStopsEndToEnd, in English, Welsh and Tagalog: the realistic
// debrief reveals nothing before the end; leaving the game pauses it and
// the debrief names the minute left at; a shared link plays back to its
// sharer's minute and no further, and grades only the minutes played; a
// fork's error goes when a lever takes the run over; a lever's error goes
// when a step shows the lever's value, and a typed value survives a
// change of language; game over shows no negative budget.
func TestRunStopsEndToEnd(t *testing.T) {
	t.Parallel()
	base := startConsole(t)
	b := newBrowser(t)
	ctx := b.ctx
	lost := sim.Config{Scenario: "bad-deploy", Seed: 4, Noise: true, Actions: []sim.Action{
		sim.Switch(1, sim.ControlAutoscaling, false), sim.Set(1, sim.ControlFleetFloor, 1),
	}}
	langs := someLanguages(testing.Short(), "cy", "en", "tl") // Welsh alone in make test
	for _, lang := range langs {
		cat := catalogue(t, lang)
		startGameAs(b, ctx, base, lang, "bad-deploy", 7, "realistic", true)
		// Play at 10× past the deploy, then leave for the debrief.
		b.do(ctx, lang+": play past the deploy", choose("speed", "10"), click(`#play`), waitFor(`window.afloat.state.shown >= 14`), click(`#nav-debrief`),
			waitFor(`location.hash === "#debrief" && !window.afloat.state.playing && document.querySelectorAll("#debrief-figures div").length > 0`))
		left := evaluate[int](b, ctx, `window.afloat.state.shown`)
		// The minute left at is the debrief's: an in-flight step does not
		// move the run behind it.
		b.do(ctx, lang+": settle", waitSettled())
		if now := evaluate[int](b, ctx, `window.afloat.state.shown`); now != left || evaluate[bool](b, ctx, `window.afloat.state.playing`) {
			t.Errorf("%s: the run went on behind the debrief: minute %d, then %d", lang, left, now)
		}
		left = evaluate[int](b, ctx, `window.afloat.state.shown`)
		if span := b.text(ctx, "#debrief-span"); !strings.Contains(span, strconv.Itoa(left+1)) {
			t.Errorf("%s: the debrief says %q, not the %d minutes played", lang, span, left+1)
		}
		if evaluate[bool](b, ctx, `!document.getElementById("debrief-reveal").hidden || !!document.querySelector('#debrief-figures [data-figure="bad_build"]')`) {
			t.Errorf("%s: the realistic debrief mid-run reveals the bad build: %q", lang, b.text(ctx, "#debrief-reveal"))
		}
		if cap := b.text(ctx, "#timeline-cap"); strings.Contains(cap, cat["debrief.series.bad_build"]) {
			t.Errorf("%s: the realistic debrief mid-run plots the bad build: %q", lang, cap)
		}
		b.do(ctx, lang+": the model page", click(`#nav-model`), chromedp.WaitVisible(chromedp.CSS(`#formulas li`)))
		if now := evaluate[int](b, ctx, `window.afloat.state.shown`); now != left {
			t.Errorf("%s: the run went on behind the model page: minute %d, then %d", lang, left, now)
		}

		// A lever's error goes when a step shows the lever again; a typed
		// value survives a change of language, its message in the new one.
		b.do(ctx, lang+": back to the game", click(`#nav-play`), chromedp.WaitVisible(chromedp.CSS(`#control-fleet_floor`)))
		b.do(ctx, lang+": an invalid floor", typeInto(`#control-fleet_floor`, "99"), waitFor(`document.getElementById("error-fleet_floor").textContent !== ""`))
		b.do(ctx, lang+": a step", click(`#step`), waitFor(fmt.Sprintf(`window.afloat.state.shown === %d`, left+1)))
		if msg := evaluate[string](b, ctx, `(document.getElementById("error-fleet_floor") || {}).textContent || ""`); msg != "" || evaluate[string](b, ctx, `document.getElementById("control-fleet_floor").value`) == "99" {
			t.Errorf("%s: after a step the floor shows %q with the error %q", lang, evaluate[string](b, ctx, `document.getElementById("control-fleet_floor").value`), msg)
		}
		other := map[string]string{"en": "cy", "cy": "tl", "tl": "en"}[lang]
		oc := catalogue(t, other)
		want := fill(oc["control.error.range"], map[string]string{"label": oc["control.fleet_floor.label"], "min": "0", "max": "40"})
		// The change of language builds the levers again: the message is
		// read in the page, in one go, once the new one is there (reading
		// the node from here could find it replaced between the query and
		// the read).
		errorText := `(document.getElementById("error-fleet_floor") || {}).textContent || ""`
		b.do(ctx, lang+": an invalid floor again, then "+other, typeInto(`#control-fleet_floor`, "99"), chromedp.SetValue(chromedp.CSS(`#lang`), other),
			chromedp.Evaluate[chromedp.Void](`document.getElementById("lang").dispatchEvent(new Event("change", { bubbles: true }))`),
			waitFor(fmt.Sprintf(`document.documentElement.lang === %q`, other)),
			waitFor(fmt.Sprintf(`(%s) === %q`, errorText, want)))
		if v, msg := evaluate[string](b, ctx, `document.getElementById("control-fleet_floor").value`), evaluate[string](b, ctx, errorText); v != "99" || msg != want {
			t.Errorf("%s → %s: the floor shows %q with %q, want 99 with %q", lang, other, v, msg, want)
		}

		// Share the run at its minute; the link plays back to it and stops.
		b.do(ctx, lang+": share", chromedp.Navigate(base+"/?lang="+lang+"&"+strings.TrimPrefix(evaluate[string](b, ctx, `location.search`), "?")+"#play"), waitReady(),
			click(`#share`), chromedp.WaitVisible(chromedp.CSS(`#share-link`)))
		at := evaluate[int](b, ctx, `window.afloat.state.shown`)
		link := evaluate[string](b, ctx, `document.getElementById("share-link").value`)
		b.do(ctx, lang+": watch the shared run", chromedp.Navigate(link+"&lang="+lang), waitReady(), chromedp.WaitVisible(chromedp.CSS(`#replay`)),
			choose("speed", "10"), click(`#watch`), waitFor(`window.afloat.state.watching`),
			waitFor(`!window.afloat.state.watching && !window.afloat.state.playing`))
		if got := evaluate[int](b, ctx, `window.afloat.state.shown`); got != at {
			t.Errorf("%s: the shared run played back to minute %d, the sharer's was %d", lang, got, at)
		}
		if !evaluate[bool](b, ctx, `document.getElementById("play").disabled && document.getElementById("step").disabled && !window.afloat.state.over`) {
			t.Errorf("%s: at the sharer's minute the run can still be played on, or is over", lang)
		}
		// Why Play and Step are disabled is on the page, for everyone.
		if note, want := b.text(ctx, "#replay-note"), strings.SplitN(catalogue(t, lang)["replay.ended"], "{", 2)[0]; !strings.Contains(note, want) {
			t.Errorf("%s: at the sharer's minute the page says %q, not why the run stopped (%q…)", lang, note, want)
		}
		b.do(ctx, lang+": its debrief", click(`#nav-debrief`), waitFor(`document.querySelectorAll("#debrief-figures div").length > 0`))
		if evaluate[bool](b, ctx, `document.getElementById("grade").dataset.stars !== undefined`) {
			t.Errorf("%s: the shared run is graded as a whole run", lang)
		}
		if span := b.text(ctx, "#debrief-span"); !strings.Contains(span, strconv.Itoa(at+1)) {
			t.Errorf("%s: the shared run's debrief says %q, not the %d minutes played", lang, span, at+1)
		}
		// A fork refused, then a lever takes the run over: the error goes.
		b.do(ctx, lang+": a fork refused", click(`#nav-play`), chromedp.WaitVisible(chromedp.CSS(`#fork-minute`)),
			typeOver(`#fork-minute`, "999"), click(`#fork`), waitFor(`!document.getElementById("error").hidden`))
		b.do(ctx, lang+": a lever takes over", click(`#control-heavy_feature`), waitFor(`!window.afloat.state.shared`))
		if evaluate[bool](b, ctx, `!document.getElementById("error").hidden`) {
			t.Errorf("%s: the fork's error %q stays after a lever took the run over", lang, b.text(ctx, "#error"))
		}

		// Game over: no budget below 0 % anywhere.
		b.do(ctx, lang+": game over", chromedp.Navigate(base+"/?lang="+lang+"&"+lost.Query().Encode()+"&mode=training#play"), waitReady())
		stepToEnd(b, ctx)
		b.do(ctx, lang+": its debrief", waitFor(`location.hash === "#debrief" && document.getElementById("grade").dataset.stars !== undefined`))
		if neg := evaluate[[]string](b, ctx, "("+negativeNumber+`)(["budget", "debrief-figures", "what-ifs", "score-table", "page-alert"])`); len(neg) > 0 {
			t.Errorf("%s: game over shows negative numbers: %q", lang, neg)
		}
		// Counts take their plural form from the language's rules.
		plurals := evaluateAsync[[]string](b, ctx, `(async () => {
  const { t, tn } = await import("/static/js/i18n.js");
  return [tn("coach.why.earlier", 1), tn("coach.why.earlier", 3), t("assign.picked", { n: 1, member: "p" }), tn("debrief.value.shed", 1, { share: "0.0" })];
})()`)
		wantForms := map[string][]string{
			"en": {"a minute earlier", "3 minutes earlier", "Picked 1 time; the last went to p.", "1 request (0.0 %)"},
			"cy": {"funud yn gynharach", "3 munud yn gynharach", "Dewiswyd unwaith; aeth yr olaf i p.", "1 cais (0.0 %)"},
			"tl": {"isang minuto nang mas maaga", "3 minuto nang mas maaga", "Pumili nang isang beses; napunta ang huli sa p.", "1 request (0.0 %)"},
		}[lang]
		if fmt.Sprint(plurals) != fmt.Sprint(wantForms) {
			t.Errorf("%s: plural forms %q, want %q", lang, plurals, wantForms)
		}
		if missing := evaluate[[]string](b, ctx, `[...window.afloat.missing]`); len(missing) > 0 {
			t.Errorf("%s: keys missing from the catalogue: %v", lang, missing)
		}
	}
	b.noProblems()
}

// mysterySeed is the first seed whose mystery morning draws these
// incidents, in any order.
func mysterySeed(t *testing.T, want ...sim.Incident) int {
	t.Helper()
	sc, _ := sim.Lookup("mystery")
	slices.Sort(want)
	for seed := uint32(1); seed <= 1000; seed++ {
		s, err := sim.New(sc, seed, true)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := s.Morning()
		got := slices.Clone(m.Incidents)
		slices.Sort(got)
		if slices.Equal(got, want) {
			return int(seed)
		}
	}
	t.Fatalf("no mystery seed in 1-1000 draws %v", want)
	return 0
}

// incidentsOf is /api/debrief's incidents of a whole mystery run, and its
// morning's, as the seed drew them.
func incidentsOf(t *testing.T, base string, seed int, acts []sim.Action) ([]bots.Finding, []sim.Incident) {
	t.Helper()
	out := postJSON(t, base+"/api/debrief", map[string]any{"scenario": "mystery", "seed": seed, "actions": acts})
	raw, _ := json.Marshal(map[string]any{"found": out["incidents"], "morning": out["morning"]})
	var got struct {
		Found   []bots.Finding
		Morning sim.Morning
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("mystery seed %d: /api/debrief's incidents %s: %v", seed, raw, err)
	}
	return got.Found, got.Morning.Incidents
}

// enNumber writes a number rounded to a whole as the debrief does
// (toLocaleString("en")): 1,412.
func enNumber(v float64) string {
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestMysteryDebriefEndToEnd plays a mystery morning to its end in
// English, Welsh and Tagalog — each language a seed that draws two
// incidents at once, a different pair each, so that the three incidents
// are each named twice — answering the first sign through the levers in
// the realistic mode. The debrief must name every incident the seed drew,
// with the minute the dashboard first showed it and the sign, in the
// page's language; axe runs on it.
//
// Stepping through the 240-minute morning costs seconds a language, so
// make test (-short) plays the English morning only and make test-long
// all three (LONG_TESTS): a language changes the words, not the page's
// code, and the unit tests check every catalogue complete.
func TestMysteryDebriefEndToEnd(t *testing.T) {
	t.Parallel()
	base := startConsole(t)
	b := newBrowser(t)
	ctx := b.ctx
	sc, _ := sim.Lookup("mystery")
	// The move that answers each incident's first sign.
	answer := map[sim.Incident]sim.Action{
		sim.IncidentBadDeploy: {Control: sim.ControlRollback},
		sim.IncidentFlush:     {Control: sim.ControlHeavyFeature, Value: 0},
		sim.IncidentSurge:     {Control: sim.ControlFleetFloor, Value: 30},
	}
	cases := []struct {
		lang string
		pair []sim.Incident
	}{
		{"en", []sim.Incident{sim.IncidentBadDeploy, sim.IncidentSurge}},
		{"cy", []sim.Incident{sim.IncidentBadDeploy, sim.IncidentFlush}},
		{"tl", []sim.Incident{sim.IncidentSurge, sim.IncidentFlush}},
	}
	if testing.Short() {
		cases = cases[:1]
	}
	for _, c := range cases {
		seed := mysterySeed(t, c.pair...)
		cat := catalogue(t, c.lang)
		unanswered, _ := incidentsOf(t, base, seed, []sim.Action{})
		if len(unanswered) != 2 {
			t.Fatalf("%s: mystery seed %d draws %v, /api/debrief names %v", c.lang, seed, c.pair, unanswered)
		}
		first := unanswered[0]
		startGameAs(b, ctx, base, c.lang, "mystery", seed, "realistic", true)
		stepTo(b, ctx, first.Shown.Minute)
		operate(b, ctx, answer[first.Incident])
		stepTo(b, ctx, sc.Minutes-1)
		b.do(ctx, c.lang+": the mystery's debrief", waitFor(`location.hash === "#debrief" && document.getElementById("grade").dataset.stars !== undefined`),
			chromedp.WaitVisible(chromedp.CSS(`#debrief-reveal`)), waitSettled())
		acts := pageActions(b, ctx)
		if len(acts) != 1 || acts[0].Minute != first.Shown.Minute+1 {
			t.Errorf("%s: the page played %v, want one move at minute %d", c.lang, acts, first.Shown.Minute+1)
		}
		found, drawn := incidentsOf(t, base, seed, acts)
		named := make([]sim.Incident, len(found))
		for i, f := range found {
			named[i] = f.Incident
		}
		slices.Sort(named)
		slices.Sort(drawn)
		if !slices.Equal(named, drawn) {
			t.Errorf("%s: seed %d drew %v, the debrief's incidents are %v", c.lang, seed, drawn, named)
		}
		reveal := b.text(ctx, "#debrief-reveal")
		// One sentence an incident, numbered: "Incident 1 of 2: …".
		for k, f := range found {
			value := enNumber(100 * f.Shown.Value)
			if f.Shown.Kind == bots.SignRequests {
				value = enNumber(f.Shown.Value)
			}
			sign := fill(cat["coach.sign."+f.Shown.Kind], map[string]string{"clock": f.Shown.Clock, "value": value})
			want := fill(cat["debrief.incident.nth"], map[string]string{
				"incident": cat["incident."+string(f.Incident)], "clock": f.Shown.Clock, "minute": strconv.Itoa(f.Shown.Minute), "sign": sign,
				"n": strconv.Itoa(k + 1), "count": strconv.Itoa(len(found)),
			})
			if !strings.Contains(reveal, want) {
				t.Errorf("%s: seed %d: the debrief says %q, which does not name %s as %q", c.lang, seed, reveal, f.Incident, want)
			}
			// The surge's figures come after the sentence that names it.
			if surge, _, _ := strings.Cut(cat["debrief.surge"], "{"); f.Incident == sim.IncidentSurge &&
				strings.Index(reveal, surge) < strings.Index(reveal, want) {
				t.Errorf("%s: seed %d: the debrief says %q: the surge's figures before the sentence that names it", c.lang, seed, reveal)
			}
		}
		// The score against doing nothing on this seed, and no
		// percentiles (they rank a score among other mornings).
		if score := b.text(ctx, "#score-line"); !strings.Contains(score, strings.SplitN(cat["score.nothing_seed"], "{", 2)[0]) {
			t.Errorf("%s: seed %d: the score line %q does not say what doing nothing cost on this seed", c.lang, seed, score)
		}
		if evaluate[bool](b, ctx, `!document.getElementById("percentiles").hidden`) {
			t.Errorf("%s: seed %d: the mystery's debrief ranks the score among other mornings", c.lang, seed)
		}
		// A healthy deploy, the morning's decoy, is named as healthy.
		s, _ := sim.New(sc, uint32(seed), true)
		if m, _ := s.Morning(); m.Deploy >= 0 && m.BuildErrors == 0 {
			want := fill(cat["debrief.healthy_deploy"], map[string]string{"clock": sim.Clock(sc.Start + m.Deploy)})
			if !strings.Contains(reveal, want) {
				t.Errorf("%s: seed %d: the debrief says %q, which does not name the healthy deploy as %q", c.lang, seed, reveal, want)
			}
		}
		b.checkAxe(ctx, c.lang+": the mystery's debrief")
		if missing := evaluate[[]string](b, ctx, `[...window.afloat.missing]`); len(missing) > 0 {
			t.Errorf("%s: keys missing from the catalogue: %v", c.lang, missing)
		}
	}
	b.noProblems()
}
