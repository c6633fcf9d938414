package web

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/afloat/afloat/sim"
)

// TestDrillViewEndToEnd, in English, Welsh and Tagalog: a console started
// with --drill, opened at /?drill=1, shows the running drill read-only
// (issue 48): the run so far stopped at the minute under way, with the
// team's levers; every lever, Play and Step off, nothing to watch, take
// over or fork; axe-core content with it; a minute more as the drill
// moves on, and the run anew when the team pulls a lever; at the end,
// the drill's postmortem linked. A new game leaves the drill.
func TestDrillViewEndToEnd(t *testing.T) {
	t.Parallel()
	s, drillURL, clock, _ := startDrill(t, "bad-deploy", 7)
	clock.Advance(3500 * time.Millisecond) // minute 3 under way
	if _, err := s.Lever(sim.ControlFleetFloor, 20); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.Drill = drillURL
	base := serveConsole(t, c)
	b := newBrowser(t)
	ctx := b.ctx
	const state = `window.afloat.state`
	for _, lang := range someLanguages(testing.Short(), "en", "cy", "tl") {
		cat := catalogue(t, lang)
		m := s.Status().Minute
		b.do(ctx, lang+": open the drill", chromedp.Navigate(base+"/?drill=1&lang="+lang), waitReady(),
			waitFor(fmt.Sprintf(`%s.drill && %s.shown === %d && !document.getElementById("drill").hidden`, state, state, m)))
		want := fill(cat["drill.following"], map[string]any{"url": drillURL, "minute": m, "minutes": 120, "clock": fmt.Sprintf("09:%02d", m), "speed": "1s"})
		if note := b.text(ctx, "#drill-note"); note != want {
			t.Errorf("%s: the drill note says %q, want %q", lang, note, want)
		}
		if on := evaluate[int](b, ctx, `document.querySelectorAll("#controls input:not(:disabled), #controls button:not(:disabled)").length`); on > 0 {
			t.Errorf("%s: %d levers are on while the page follows the drill", lang, on)
		}
		if got := evaluate[string](b, ctx, `[document.getElementById("play").disabled, document.getElementById("step").disabled, document.getElementById("replay").hidden, location.search].join(" ")`); got != "true true true ?drill=1&lang="+lang {
			t.Errorf("%s: Play disabled, Step disabled, the replay panel hidden, the URL: %s; want true true true ?drill=1&lang=%s", lang, got, lang)
		}
		if got := evaluate[string](b, ctx, `JSON.stringify(`+state+`.actions)`); got != `[{"minute":4,"control":"fleet_floor","value":20}]` {
			t.Errorf("%s: the run's levers %s, want the team's fleet floor of 20 at minute 4", lang, got)
		}
		b.do(ctx, "settle", waitSettled())
		b.checkAxe(ctx, lang+": the drill view")
		// The drill moves on: so does the page, a minute at a time.
		clock.Advance(2 * time.Second)
		b.do(ctx, lang+": two minutes on", waitFor(fmt.Sprintf(`%s.shown === %d`, state, m+2)),
			waitFor(fmt.Sprintf(`document.getElementById("drill-note").textContent.includes("09:%02d")`, m+2)))
	}
	// The team pulls a lever: the page opens the run anew with it.
	if _, err := s.Lever(sim.ControlRollback, 0); err != nil {
		t.Fatal(err)
	}
	b.do(ctx, "a lever pulled", waitFor(state+`.actions.length === 2 && `+state+`.actions[1].control === "rollback"`))
	// The end: the whole run, and the postmortem.
	clock.Advance(3 * time.Minute)
	b.do(ctx, "the end", waitFor(state+`.shown === 119 && `+state+`.over && !document.getElementById("drill-postmortem").hidden`))
	lang := someLanguages(testing.Short(), "en", "cy", "tl")
	cat := catalogue(t, lang[len(lang)-1])
	if note, want := b.text(ctx, "#drill-note"), fill(cat["drill.ended"], map[string]any{"url": drillURL, "minutes": 120, "clock": "11:00"}); note != want {
		t.Errorf("at the end the drill note says %q, want %q", note, want)
	}
	href := evaluate[string](b, ctx, `document.getElementById("drill-postmortem").href`)
	if href != drillURL+"/postmortem" {
		t.Errorf("the postmortem link goes to %s, want %s/postmortem", href, drillURL)
	}
	// What the link opens (in a tab of its own): the drill's postmortem.
	resp, err := http.Get(href)
	if err != nil {
		t.Fatal(err)
	}
	pm, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(pm), "#") {
		t.Errorf("the postmortem link answers %s: %.200s", resp.Status, pm)
	}
	// A new game leaves the drill.
	b.do(ctx, "a new game", click("#new-game"), waitFor(`!`+state+`.drill && document.getElementById("drill").hidden && !location.search.includes("drill")`))
	if csp := evaluate[[]string](b, ctx, `window.__csp || []`); len(csp) > 0 {
		t.Errorf("Content-Security-Policy violations: %v", csp)
	}
	b.noProblems()
}
