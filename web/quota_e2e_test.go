package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// typeReplacing clears an input and types text into it, key by key, as a
// person does.
func typeReplacing(css, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Focus(chromedp.CSS(css)),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).select()`, css)),
		chromedp.KeyEvent(kb.Delete),
		chromedp.SendKeys(chromedp.CSS(css), text),
	)
}

// quotaIdle waits until the lab has an answer for n actions and no
// request in flight.
func quotaIdle(n int) chromedp.Action[chromedp.Void] {
	return waitFor(fmt.Sprintf(`(() => { const q = window.afloat.quota; return !!q && !q.busy && !!q.resp && q.resp.request.actions !== undefined && (q.resp.request.actions || []).length === %d; })()`, n))
}

// quotaAt waits until the lab's clock shows text.
func quotaAt(text string) chromedp.Action[chromedp.Void] {
	return waitFor(fmt.Sprintf(`document.getElementById("quota-clock").textContent === %q`, text))
}

// quotaAPI asks the console's API for a run, as a client other than the
// page would.
func quotaAPI(t *testing.T, base string, body []byte) quotaResponse {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/quota/run", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out quotaResponse
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/quota/run %s: %d %v", body, res.StatusCode, err)
	}
	return out
}

// TestQuotaLabEndToEnd drives the global quota lab in headless Chromium as
// a person would, in English, Welsh and Tagalog: types a tenant and runs a
// seed; steps and plays; shifts the traffic into us, cuts us off and heals
// it, crashes and pauses the coordinator, skews two clocks, undoes and
// redoes an action, zooms on the shift; plays to the end and reads the
// verdict "bound held"; checks every number drawn (each chart's series and
// its data table) against the frames the API computes for the same run;
// opens the share link in a fresh tab and gets the same run; and finds no
// catalogue key missing and no raw key shown.
func TestQuotaLabEndToEnd(t *testing.T) {
	t.Parallel()
	base := startConsole(t)
	b := newBrowser(t)
	ctx := b.ctx
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch}); err != nil {
		t.Fatal(err)
	}
	b.do(ctx, "open the quota lab", chromedp.Navigate(base+"/#quota"), waitReady(), quotaIdle(0),
		waitFor(`document.querySelectorAll("#quota-charts .uplot").length === 5`))
	if got := b.text(ctx, "#quota-clock"); got != "0:00" {
		t.Errorf("the lab opens at %q, want 0:00", got)
	}
	rawKey := regexp.MustCompile(`^[a-z_]+(\.[a-z0-9_-]+)+$`)

	// Welsh plays the best-effort mode (alone in make test), English and
	// Tagalog the hard one (in make test-long).
	for _, lang := range someLanguages(testing.Short(), "cy", "en", "tl") {
		cat := catalogue(t, lang)
		b.do(ctx, "switch to "+lang, choose("lang", lang), waitFor(fmt.Sprintf(`document.documentElement.lang === %q`, lang)))

		// A wrong tenant is refused on the page, in the language, naming
		// the field and its range; nothing runs.
		b.do(ctx, lang+": type a rate out of range", typeReplacing("#quota-rate", "5000"), click("#quota-run"),
			waitFor(`!document.getElementById("quota-form-error").hidden`))
		wantErr := fill(cat["quota.invalid"], map[string]string{"field": cat["quota.rate"], "min": "10", "max": "1,000"})
		if got := b.text(ctx, "#quota-form-error"); got != wantErr {
			t.Errorf("%s: the form says %q, want %q", lang, got, wantErr)
		}
		if !evaluate[bool](b, ctx, `document.getElementById("quota-rate").getAttribute("aria-invalid") === "true"`) {
			t.Errorf("%s: the rate out of range is not marked invalid", lang)
		}

		// The tenant typed in, best-effort in Welsh (to use E), hard
		// otherwise; a three-minute run.
		mode := "hard"
		if lang == "cy" {
			mode = "best-effort"
		}
		b.do(ctx, lang+": type the tenant",
			typeReplacing("#quota-seed", "7"),
			typeReplacing("#quota-rate", "500"),
			typeReplacing("#quota-burst", "6000"),
			choose("quota-mode", mode),
			typeReplacing("#quota-lease", "10"),
			typeReplacing("#quota-minutes", "3"),
			typeReplacing("#quota-traffic-eu", "72"),
			typeReplacing("#quota-traffic-us", "36"),
			typeReplacing("#quota-traffic-ap", "12"),
		)
		if mode == "best-effort" {
			b.do(ctx, lang+": type E", typeReplacing("#quota-emergency", "100"))
		} else if !evaluate[bool](b, ctx, `document.getElementById("quota-emergency").disabled`) {
			t.Errorf("%s: E can be typed in hard mode", lang)
		}
		b.do(ctx, lang+": run seed 7", click("#quota-run"), quotaIdle(0),
			waitFor(`window.afloat.quota.resp.request.seed === 7 && window.afloat.quota.resp.seconds === 180`), quotaAt("0:00"))
		if !evaluate[bool](b, ctx, `document.getElementById("quota-form-error").hidden`) {
			t.Errorf("%s: the form error stays after a good run", lang)
		}

		// Step, play a little at 30×, pause, step to 0:30.
		b.do(ctx, lang+": step", click("#quota-step"), quotaAt("0:01"), click("#quota-step10"), quotaAt("0:11"))
		b.do(ctx, lang+": play at 30×", choose("quota-speed", "30"), click("#quota-play"),
			waitFor(`window.afloat.quota.shown >= 14`), click("#quota-play"), waitFor(`!window.afloat.quota.playing`))
		shown := evaluate[int](b, ctx, `window.afloat.quota.shown`)
		if shown > 28 {
			t.Fatalf("%s: paused at second %d, past 0:29", lang, shown+1)
		}
		for s := shown + 1; s < 30; s++ {
			b.do(ctx, lang+": step to 0:30", press("#quota-step"))
		}
		b.do(ctx, lang+": at 0:30", quotaAt("0:30"))

		// Shift all the traffic into us (typed), from the keyboard.
		b.do(ctx, lang+": shift into us",
			typeReplacing("#quota-shift-eu", "0"), typeReplacing("#quota-shift-us", "120"), typeReplacing("#quota-shift-ap", "0"),
			press("#quota-do-shift"), quotaIdle(1))
		if got, want := b.text(ctx, "#quota-explain"), fill(cat["quota.after.shift"], map[string]string{"clock": "0:30"}); got != want {
			t.Errorf("%s: after the shift the page explains %q, want %q", lang, got, want)
		}
		if got := b.text(ctx, "#quota-actions li"); !strings.HasPrefix(got, "0:30 — ") || !strings.Contains(got, "120") {
			t.Errorf("%s: the first action reads %q", lang, got)
		}

		// Cut us off at 0:40, heal it at 1:10; a heal of a region not cut
		// off is refused on the page.
		b.do(ctx, lang+": to 0:40", click("#quota-step10"), quotaAt("0:40"))
		b.do(ctx, lang+": heal eu, which is not cut off", choose("quota-cut-region", "eu"), click("#quota-do-heal"),
			waitFor(`!document.getElementById("quota-act-error").hidden`))
		if got, want := b.text(ctx, "#quota-act-error"), fill(cat["quota.not_cut"], map[string]string{"region": "eu"}); got != want {
			t.Errorf("%s: healing eu says %q, want %q", lang, got, want)
		}
		b.do(ctx, lang+": cut us off", choose("quota-cut-region", "us"), click("#quota-do-partition"), quotaIdle(2))
		partitionKey := "quota.after.partition.hard"
		if mode == "best-effort" {
			partitionKey = "quota.after.partition.best"
		}
		if got, want := b.text(ctx, "#quota-explain"), fill(cat[partitionKey], map[string]string{"region": "us", "clock": "0:40", "lease": "10", "e": map[string]string{"hard": "0", "best-effort": "100"}[mode]}); got != want {
			t.Errorf("%s: after the partition the page explains %q, want %q", lang, got, want)
		}
		b.do(ctx, lang+": to 0:55", click("#quota-step10"), click("#quota-step"), click("#quota-step"),
			click("#quota-step"), click("#quota-step"), click("#quota-step"), quotaAt("0:55"))
		// 15 s into the partition us's lease has run out: the page says so.
		if row := evaluate[[]string](b, ctx, `[...document.querySelectorAll("#quota-now tbody tr")[1].cells].map((c) => c.textContent)`); !strings.Contains(row[7], cat["quota.state.cut"]) || !strings.Contains(row[7], cat["quota.state.no_lease"]) {
			t.Errorf("%s: us at 0:55 reads %v, want it cut off with no lease", lang, row)
		}
		if mode == "hard" && !evaluate[bool](b, ctx, `document.querySelectorAll("#quota-now tbody tr")[1].className === "warn"`) {
			t.Errorf("%s: us cut off is not marked", lang)
		}
		for range 15 {
			b.do(ctx, lang+": step to 1:10", click("#quota-step"))
		}
		b.do(ctx, lang+": heal us", quotaAt("1:10"), click("#quota-do-heal"), quotaIdle(3))

		// Crash the coordinator at 1:20 (successor after 5 s); pause it at
		// 1:40 (successor after 3 s, wakes after 8 s); a crash while it is
		// paused is refused.
		b.do(ctx, lang+": crash at 1:20", click("#quota-step10"), quotaAt("1:20"),
			typeReplacing("#quota-down", "5"), click("#quota-do-crash"), quotaIdle(4))
		b.do(ctx, lang+": coordinator down at 1:22", click("#quota-step"), click("#quota-step"), quotaAt("1:22"))
		if got, want := b.text(ctx, "#quota-coordinator"), fill(cat["quota.coordinator_down"], map[string]string{"epoch": "1"}); got != want {
			t.Errorf("%s: at 1:22 the coordinator reads %q, want %q", lang, got, want)
		}
		b.do(ctx, lang+": pause at 1:40", click("#quota-step10"), click("#quota-step"), click("#quota-step"), click("#quota-step"),
			click("#quota-step"), click("#quota-step"), click("#quota-step"), click("#quota-step"), click("#quota-step"), quotaAt("1:40"),
			typeReplacing("#quota-down", "3"), typeReplacing("#quota-wake", "8"), click("#quota-do-pause"), quotaIdle(5))
		b.do(ctx, lang+": crash while paused", click("#quota-step"), quotaAt("1:41"), click("#quota-do-crash"),
			waitFor(`!document.getElementById("quota-act-error").hidden`))
		if got, want := b.text(ctx, "#quota-act-error"), fill(cat["quota.coordinator_busy"], map[string]string{"clock": "1:48"}); got != want {
			t.Errorf("%s: a crash while paused says %q, want %q", lang, got, want)
		}

		// Skew eu's clock, then the coordinator's; undo the last and do it
		// again.
		b.do(ctx, lang+": skew eu at 1:50", click("#quota-step"), click("#quota-step"), click("#quota-step"), click("#quota-step"),
			click("#quota-step"), click("#quota-step"), click("#quota-step"), click("#quota-step"), click("#quota-step"), quotaAt("1:50"),
			choose("quota-skew-node", "eu"), typeReplacing("#quota-drift", "-500"), click("#quota-do-skew"), quotaIdle(6))
		b.do(ctx, lang+": skew the coordinator", choose("quota-skew-node", "coordinator"), typeReplacing("#quota-drift", "300"), click("#quota-do-skew"), quotaIdle(7))
		if got, want := b.text(ctx, "#quota-explain"), fill(cat["quota.after.skew_coordinator"], map[string]string{"clock": "1:50"}); got != want {
			t.Errorf("%s: after the coordinator's skew the page explains %q, want %q", lang, got, want)
		}
		b.do(ctx, lang+": undo", click("#quota-undo"), quotaIdle(6))
		if n := evaluate[int](b, ctx, `document.querySelectorAll("#quota-actions li").length`); n != 6 {
			t.Errorf("%s: %d actions listed after the undo, want 6", lang, n)
		}
		b.do(ctx, lang+": skew the coordinator again", click("#quota-do-skew"), quotaIdle(7))

		// Zoom on the shift: the close-up is the API's, every 100 ms.
		b.do(ctx, lang+": zoom on the shift", choose("quota-closeup", "0"),
			waitFor(`!window.afloat.quota.busy && window.afloat.quota.resp.closeup && window.afloat.quota.resp.closeup.action === 0`))

		// Play to the end: the checker's verdict.
		b.do(ctx, lang+": to the end", click("#quota-end"), quotaAt("3:00"))
		verdict := b.text(ctx, "#quota-verdict")
		held := evaluate[bool](b, ctx, `window.afloat.quota.resp.verdict.held`)
		if !held {
			t.Fatalf("%s: the checker found violations: %s", lang, b.text(ctx, "#quota-verdict-detail"))
		}
		prefix := cat["quota.verdict.held"][:strings.Index(cat["quota.verdict.held"], "{")]
		if mode == "best-effort" && evaluate[float64](b, ctx, `window.afloat.quota.resp.verdict.worst_excess`) > 0 {
			prefix = cat["quota.verdict.held_allowance"][:strings.Index(cat["quota.verdict.held_allowance"], "{")]
		}
		if !strings.HasPrefix(verdict, prefix) || !evaluate[bool](b, ctx, `document.getElementById("quota-verdict").classList.contains("held")`) {
			t.Errorf("%s: the verdict reads %q, want it to start %q", lang, verdict, prefix)
		}
		if got := b.text(ctx, "#quota-announce"); got != verdict {
			t.Errorf("%s: screen readers hear %q at the end, want the verdict %q", lang, got, verdict)
		}
		if lang == "en" && !strings.HasPrefix(verdict, "Bound held") {
			t.Errorf("the verdict reads %q, want \"Bound held\"", verdict)
		}

		// What the page drew is what the API computes for the same run.
		body := evaluate[string](b, ctx, `JSON.stringify({ ...window.afloat.quota.req, actions: window.afloat.quota.actions, closeup: 0 })`)
		api := quotaAPI(t, base, []byte(body))
		checkQuotaDrawn(t, b, ctx, lang, api)
		if len(api.Request.Actions) != 7 || api.Summary.Epochs != 3 {
			t.Errorf("%s: the API's run has %d actions and %d epochs, want 7 and 3 (a crash and a pause)", lang, len(api.Request.Actions), api.Summary.Epochs)
		}

		// The share link, in a fresh tab, replays the same run at the same
		// second (1:30 here, so that it plays on from there).
		b.do(ctx, lang+": share", click("#quota-share"), chromedp.WaitVisible(chromedp.CSS("#quota-share-link")), click("#quota-copy-link"))
		link := evaluate[string](b, ctx, `document.getElementById("quota-share-link").value`)
		if !strings.Contains(link, "lab=quota") || !strings.Contains(link, "at=180") || !strings.HasSuffix(link, "#quota") {
			t.Errorf("%s: share link %s", lang, link)
		}
		link = strings.Replace(link, "at=180", "at=90", 1)
		tab := b.newTab()
		b.do(tab, lang+": open the share link", chromedp.Navigate(link), waitReady(), quotaIdle(7), quotaAt("1:30"))
		first := evaluate[string](b, ctx, `JSON.stringify(window.afloat.quota.resp.frames)`)
		second := evaluate[string](b, tab, `JSON.stringify(window.afloat.quota.resp.frames)`)
		if first != second {
			t.Errorf("%s: the share link replayed a different run", lang)
		}
		if got := evaluate[int](b, tab, `document.querySelectorAll("#quota-actions li").length`); got != 7 {
			t.Errorf("%s: the shared tab lists %d actions, want 7", lang, got)
		}
		for _, id := range []string{"quota-seed", "quota-rate", "quota-burst", "quota-mode", "quota-lease", "quota-minutes", "quota-traffic-us"} {
			js := fmt.Sprintf(`document.getElementById(%q).value`, id)
			if a, b2 := evaluate[string](b, ctx, js), evaluate[string](b, tab, js); a != b2 {
				t.Errorf("%s: the shared tab's %s is %q, the first's %q", lang, id, b2, a)
			}
		}
		if evaluate[bool](b, tab, `document.getElementById("quota-replay").hidden`) {
			t.Errorf("%s: the shared tab does not say it replays a link", lang)
		}
		b.do(tab, lang+": the shared tab plays on", click("#quota-end"), quotaAt("3:00"))
		if got := b.text(tab, "#quota-verdict"); got != verdict {
			t.Errorf("%s: the shared tab's verdict %q, want %q", lang, got, verdict)
		}
		b.shot(tab, "quota-shared-"+lang)

		// Every message in the language: no key missing, no raw key shown.
		missing := evaluate[[]string](b, ctx, `[...window.afloat.missing]`)
		if len(missing) > 0 {
			t.Errorf("%s: keys missing from the catalogue: %v", lang, missing)
		}
		texts := evaluate[[]string](b, ctx, `(() => { const w = document.createTreeWalker(document.getElementById("quota"), NodeFilter.SHOW_TEXT); const out = []; while (w.nextNode()) { const s = w.currentNode.textContent.trim(); if (s) out.push(s); } return out; })()`)
		for _, s := range texts {
			if rawKey.MatchString(s) {
				t.Errorf("%s: a raw key is shown: %q", lang, s)
			}
		}
		if lang == "en" {
			// docs/guide.md's picture: the run at 1:00, after the shift and
			// during the partition.
			b.do(ctx, "the guide's moment", chromedp.Navigate(strings.Replace(link, "at=90", "at=75", 1)), waitReady(), quotaIdle(7), quotaAt("1:15"))
			b.shot(ctx, "quota-lab-page")
			quotaViewShot(t, b, ctx, "quota-lab")
		} else {
			b.shot(ctx, "quota-"+lang)
		}
		b.do(ctx, lang+": back to a fresh lab", chromedp.Navigate("about:blank"), chromedp.Navigate(base+"/#quota"), waitReady(), quotaIdle(0))
	}
	if csp := evaluate[[]string](b, ctx, `window.__csp || []`); len(csp) > 0 {
		t.Errorf("Content-Security-Policy violations: %v", csp)
	}
	b.noProblems()
}

// checkQuotaDrawn compares what every chart draws, and its data table,
// with the API's frames of the same run.
func checkQuotaDrawn(t *testing.T, b *browser, ctx context.Context, lang string, api quotaResponse) {
	t.Helper()
	type plot struct {
		ID   string       `json:"id"`
		Data [][]*float64 `json:"data"`
	}
	plots := evaluate[[]plot](b, ctx, `window.afloat.quota.plots()`)
	if len(plots) != 6 {
		t.Fatalf("%s: %d charts, want 6 (tenant, ceiling, three regions, close-up)", lang, len(plots))
	}
	near := func(got *float64, want float64) bool {
		return got != nil && math.Abs(*got-want) <= 1e-9*math.Max(1, math.Abs(want))
	}
	series := func(id string, k int, want func(i int, f quotaFrame) float64, frames []quotaFrame) {
		t.Helper()
		for _, p := range plots {
			if p.ID != id {
				continue
			}
			if len(p.Data[k]) != len(frames) {
				t.Fatalf("%s: %s series %d draws %d points, the API has %d frames", lang, id, k, len(p.Data[k]), len(frames))
			}
			for i, f := range frames {
				if !near(p.Data[k][i], want(i, f)) {
					t.Fatalf("%s: %s series %d at %v s draws %v, the API's frame has %v", lang, id, k, f.T, p.Data[k][i], want(i, f))
				}
			}
			return
		}
		t.Fatalf("%s: no chart %s", lang, id)
	}
	fs := api.Frames
	series("quota-tenant", 0, func(_ int, f quotaFrame) float64 { return f.T + 1 }, fs)
	series("quota-tenant", 1, func(_ int, f quotaFrame) float64 { return f.Offered }, fs)
	series("quota-tenant", 2, func(_ int, f quotaFrame) float64 { return f.Admitted }, fs)
	series("quota-ceiling", 1, func(_ int, f quotaFrame) float64 { return f.Excess }, fs)
	for r, name := range []string{"eu", "us", "ap"} {
		id := "quota-region-" + name
		series(id, 1, func(_ int, f quotaFrame) float64 { return f.Regions[r].Demand }, fs)
		series(id, 2, func(_ int, f quotaFrame) float64 { return f.Regions[r].Admitted }, fs)
		series(id, 3, func(_ int, f quotaFrame) float64 { return f.Regions[r].Rate }, fs)
		series(id, 4, func(_ int, f quotaFrame) float64 { return f.Regions[r].Burst }, fs)
		series(id, 5, func(_ int, f quotaFrame) float64 { return f.Regions[r].Balance }, fs)
	}
	cs := api.Closeup.Frames
	for r := range 3 {
		series("quota-closeup", 1+2*r, func(_ int, f quotaFrame) float64 { return f.Regions[r].Admitted }, cs)
		series("quota-closeup", 2+2*r, func(_ int, f quotaFrame) float64 { return f.Regions[r].Rate }, cs)
	}
	// The numbers drawn peak as the run did: all of R in us after the shift.
	peak := 0.0
	for _, f := range fs[30:40] {
		peak = math.Max(peak, f.Regions[1].Rate)
	}
	if peak < 450 {
		t.Errorf("%s: us's rate share peaks at %v in the 10 s after the shift, want most of R", lang, peak)
	}

	// The data table of the us chart, opened: a row a second, the API's
	// numbers rounded as shown.
	rows := evaluate[[][]string](b, ctx, `(() => { const d = document.querySelector("#chart-quota-region-us details"); d.open = true; d.dispatchEvent(new Event("toggle")); return [...d.querySelectorAll("tbody tr")].map((tr) => [...tr.cells].map((c) => c.textContent)); })()`)
	if len(rows) != len(fs) {
		t.Fatalf("%s: us's data table has %d rows, the API %d frames", lang, len(rows), len(fs))
	}
	for i, f := range fs {
		r := f.Regions[1]
		// Each cell is the API's number rounded to what is shown (0 or 1
		// decimal): within half a unit of the last digit.
		for k, want := range []struct {
			v    float64
			unit float64
		}{{r.Demand, 1}, {r.Admitted, 1}, {r.Rate, 0.1}, {r.Burst, 1}, {r.Balance, 1}} {
			got, err := strconv.ParseFloat(rows[i][1+k], 64)
			if err != nil || math.Abs(got-want.v) > want.unit/2+1e-9 {
				t.Fatalf("%s: us's table at row %d, column %d reads %q, the API has %v", lang, i, 1+k, rows[i][1+k], want.v)
			}
		}
	}
	// The table's scroll region is reachable by keyboard, with a name.
	if !evaluate[bool](b, ctx, `(() => { const w = document.querySelector("#chart-quota-region-us .table-wrap"); return w.tabIndex === 0 && w.getAttribute("aria-label").length > 0; })()`) {
		t.Errorf("%s: the data table's scroll region is not reachable by keyboard with a name", lang)
	}
}

// quotaViewShot saves what a person sees of the lab from its clock down,
// on a tall screen: the verdict, the controls and the charts (the
// docs/guide.md's picture; shot saves the whole page); when screenshots are
// asked for (-screenshots).
func quotaViewShot(t *testing.T, b *browser, ctx context.Context, name string) {
	t.Helper()
	if *screenshotDir == "" {
		return
	}
	b.do(ctx, "a tall screen", chromedp.EmulateViewport(1400, 1900),
		chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.querySelector("#quota .clockbar").getBoundingClientRect().top + window.scrollY - 8)`))
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(tctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(b.shotDir(), name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	b.do(ctx, "the usual screen", chromedp.EmulateViewport(1400, 1000))
}
