package web

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestWatchLinksEndToEnd, in English, Welsh and Tagalog: a game played to
// its end, then the debrief's "Watch par" and its coach's first "Watch it"
// each open their run and play it from minute 0 to the scenario's last
// minute, the levers locked (issue 46: both links carried at=1, which read
// as a run shared at minute 0, and played nothing). The replay note says
// the run is whole; while it plays, the page's URL stays a watch of the
// whole run, so a reload does not cut it short; watching par to its end
// does not make par's stars the player's. A link in the old form (at=1)
// watches the whole run too.
func TestWatchLinksEndToEnd(t *testing.T) {
	t.Parallel()
	base := startConsole(t)
	b := newBrowser(t)
	ctx := b.ctx
	const scenario, seed, minutes, last = "bad-deploy", 7, 120, "10:59" // 09:00 + 119 minutes
	best := fmt.Sprintf(`Number(localStorage.getItem("afloat.best.%s.training"))`, scenario)
	for _, lang := range someLanguages(testing.Short(), "en", "cy", "tl") { // English alone in make test
		// Doing nothing leaves the coach something to show.
		startGameAs(b, ctx, base, lang, scenario, seed, "training", true)
		stepToEnd(b, ctx)
		b.do(ctx, lang+": the debrief", waitFor(`location.hash === "#debrief" && document.getElementById("grade").dataset.stars !== undefined &&
  !document.getElementById("watch-par").hidden && document.querySelector("#what-ifs a") !== null`))
		stars := evaluate[int](b, ctx, best)
		cat := catalogue(t, lang)
		links := []struct{ name, href string }{
			{"watch par", evaluate[string](b, ctx, `document.getElementById("watch-par").href`)},
			{"watch what-if 1", evaluate[string](b, ctx, `document.querySelector("#what-ifs a").href`)},
		}
		for _, l := range links {
			what := lang + ": " + l.name
			// The links open a tab of their own (target=_blank); this
			// one goes there instead. A watch plays at once, at the
			// speed chosen: the fastest the page offers (10×, 12 s for
			// the run), then a hundred times that, set in the page
			// (the same loop, a minute every 1 ms instead of 100 ms):
			// two runs at 10× were most of a 34 s test.
			b.do(ctx, what+": open "+l.href, chromedp.Navigate(l.href+"&lang="+lang), waitReady(),
				waitFor(`window.afloat.state.shared && window.afloat.state.shown >= 0`), choose("speed", "10"),
				waitFor(`window.afloat.state.shown >= 3 || !window.afloat.state.playing`))
			if note, want := b.text(ctx, "#replay-note"), fill(cat["replay.note_whole"], map[string]any{"clock": last, "minute": minutes - 1}); note != want {
				t.Errorf("%s: the replay note says %q, want %q", what, note, want)
			}
			if !evaluate[bool](b, ctx, `window.afloat.state.watching && window.afloat.state.playing`) {
				t.Fatalf("%s: the run is not played back: it stopped at minute %d", what, evaluate[int](b, ctx, `window.afloat.state.shown`))
			}
			if on := evaluate[int](b, ctx, `document.querySelectorAll("#controls input:not(:disabled), #controls button:not(:disabled)").length`); on > 0 {
				t.Errorf("%s: %d levers are on while the run plays back", what, on)
			}
			q := evaluate[string](b, ctx, `(() => { const p = new URLSearchParams(location.search); return p.get("at") + " " + p.get("watch"); })()`)
			if want := fmt.Sprintf("%d 1", minutes); q != want {
				t.Errorf("%s: mid-watch the URL's at and watch are %q, want %q: a reload would cut the run short", what, q, want)
			}
			b.do(ctx, what+": play to the end", chromedp.Evaluate[chromedp.Void](`window.afloat.state.speed = 1000`),
				waitFor(`!window.afloat.state.playing`))
			shown, over := evaluate[int](b, ctx, `window.afloat.state.shown`), evaluate[bool](b, ctx, `window.afloat.state.over`)
			if shown != minutes-1 || !over {
				t.Fatalf("%s: the run stopped at minute %d (over %v), want it played to its last minute, %d", what, shown, over, minutes-1)
			}
			b.do(ctx, what+": its debrief", waitFor(`location.hash === "#debrief" && document.getElementById("grade").dataset.stars !== undefined`))
			if got := evaluate[int](b, ctx, best); got != stars {
				t.Errorf("%s: the player's best is %d stars after watching, was %d: a watched run's stars are not the player's", what, got, stars)
			}
		}

		// A link as the debrief wrote them before, at=1, watches the
		// whole run too.
		old := strings.Replace(links[0].href, fmt.Sprintf("&at=%d&", minutes), "&at=1&", 1)
		if old == links[0].href {
			t.Fatalf("%s: the par link %s does not carry at=%d", lang, old, minutes)
		}
		b.do(ctx, lang+": an old watch link", chromedp.Navigate(old+"&lang="+lang), waitReady(),
			waitFor(`window.afloat.state.shared && window.afloat.state.shown >= 0`), choose("speed", "10"),
			waitFor(`window.afloat.state.shown >= 3 || !window.afloat.state.playing`))
		if to, watching := evaluate[int](b, ctx, `window.afloat.state.replayedTo`), evaluate[bool](b, ctx, `window.afloat.state.watching`); to != minutes || !watching {
			t.Errorf("%s: an old watch link (at=1) plays back to minute %d (watching %v), want the whole run", lang, to-1, watching)
		}
	}
	b.noProblems()
}
