package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/afloat/afloat/assign"
	"github.com/afloat/afloat/assign/assigntest"
)

// startAssignConsole serves the console with its assignment lab on a
// redis-server of the test's own.
func startAssignConsole(t *testing.T) (string, *assigntest.Server) {
	t.Helper()
	srv := assigntest.Start(t)
	return serveAssignConsole(t, srv, "e2e"), srv
}

// serveAssignConsole serves the console with its assignment lab on pool
// of srv.
func serveAssignConsole(t *testing.T, srv *assigntest.Server, pool string) string {
	t.Helper()
	c := DefaultConfig()
	c.RedisURL = srv.URL
	c.AssignPool = pool
	return serveConsole(t, c)
}

// poolOnRedis puts a pool on srv before the console starts, as another
// program of the user's would: members with count picks each.
func poolOnRedis(t *testing.T, srv *assigntest.Server, name string, count int64, members ...string) *assign.Pool {
	t.Helper()
	c := assignClient(t, srv.URL)
	pool, err := assign.New(c, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Add(assigntest.Context(t, 5*time.Second), count, members...); err != nil {
		t.Fatal(err)
	}
	return pool
}

// openAssignLab opens the lab of the console at base, watching for CSP
// violations, once its eight members show.
func openAssignLab(t *testing.T, base string) (*browser, context.Context) {
	t.Helper()
	b := newBrowser(t)
	ctx := b.ctx
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch}); err != nil {
		t.Fatal(err)
	}
	b.do(ctx, "open the assignment lab", chromedp.Navigate(base+"/#assign"), waitReady(),
		waitFor(`document.querySelectorAll("#assign-table tbody tr").length === 8`))
	return b, ctx
}

// assignRows reads the page's table: member → [count, state].
func assignRows(b *browser, ctx context.Context) map[string][2]string {
	rows := evaluate[[][]string](b, ctx, `[...document.querySelectorAll("#assign-table tbody tr")].map((tr) => [...tr.cells].map((c) => c.textContent))`)
	out := map[string][2]string{}
	for _, r := range rows {
		out[r[0]] = [2]string{r[1], r[3]}
	}
	return out
}

// TestAssignLabEndToEnd opens the assignment lab in headless Chromium on a
// real redis-server: the live counts match the pool, a pick and a hundred
// are counted and shown, removing a member stops its picks, restoring it
// at zero shows the pile-on, a load shows picks per second, a late poll
// never draws a removed member back as active, and every message exists in
// Welsh and Tagalog.
func TestAssignLabEndToEnd(t *testing.T) {
	t.Parallel()
	base, srv := startAssignConsole(t)
	b, ctx := openAssignLab(t, base)
	if !evaluate[bool](b, ctx, `document.getElementById("assign-demo").hidden`) {
		t.Error("the demo label shows on a real Redis")
	}
	if s := b.text(ctx, "#assign-server"); !strings.Contains(s, srv.URL) || !strings.Contains(s, "e2e") {
		t.Errorf("server line %q", s)
	}
	b.shot(ctx, "assign-01-open")

	b.do(ctx, "pick once", click("#assign-pick-1"), waitFor(`document.getElementById("assign-total").textContent === "1"`))
	if s := b.text(ctx, "#assign-status"); !strings.Contains(s, "proxy-01") {
		t.Errorf("after one pick the status says %q", s)
	}
	b.do(ctx, "pick 100", click("#assign-pick-100"), waitFor(`document.getElementById("assign-total").textContent === "101"`))
	rows := assignRows(b, ctx)
	for m, r := range rows {
		n, _ := strconv.Atoi(r[0])
		if n < 12 || n > 13 || r[1] != "active" {
			t.Errorf("%s after 101 picks: %v, want 12 or 13, active", m, r)
		}
	}
	if got := b.text(ctx, "#assign-spread"); got != "1" {
		t.Errorf("max−min shows %q, want 1", got)
	}

	// Remove proxy-01 (from the keyboard path: a focused button and Enter).
	b.do(ctx, "remove proxy-01", press(`#assign-table button[data-member="proxy-01"]`),
		waitFor(`document.querySelector('#assign-table tr[data-member="proxy-01"]').className === "removed"`))
	before := assignRows(b, ctx)["proxy-01"][0]
	b.do(ctx, "pick 100 without proxy-01", click("#assign-pick-100"), waitFor(`document.getElementById("assign-total").textContent === "201"`))
	if after := assignRows(b, ctx)["proxy-01"]; after[0] != before || after[1] != "removed" {
		t.Errorf("a removed member was picked: %v, was %s", after, before)
	}
	b.shot(ctx, "assign-02-removed")

	// Restore it at zero: the pile-on — the next picks all go to it.
	b.do(ctx, "restore at zero", choose("assign-policy", "zero"),
		click(`#assign-table button[data-member="proxy-01"]`),
		waitFor(`document.querySelector('#assign-table tr[data-member="proxy-01"] td').textContent === "0"`))
	if s := b.text(ctx, "#assign-policy-help"); !strings.Contains(s, "piles onto it") {
		t.Errorf("policy help %q", s)
	}
	// (The total counts removed members too: the restore at zero took
	// proxy-01's history out of it.)
	beforeRows := assignRows(b, ctx)
	total := evaluate[int](b, ctx, `window.afloat.assign.total`)
	b.do(ctx, "pick 100 after the restore", click("#assign-pick-100"),
		waitFor(fmt.Sprintf(`document.getElementById("assign-total").textContent === %q`, strconv.Itoa(total+100))))
	afterRows := assignRows(b, ctx)
	delta := func(m string) int {
		x, _ := strconv.Atoi(beforeRows[m][0])
		y, _ := strconv.Atoi(afterRows[m][0])
		return y - x
	}
	others := 0
	for m := range afterRows {
		if m != "proxy-01" {
			others = max(others, delta(m))
		}
	}
	if delta("proxy-01") < 20 || others > 11 {
		t.Errorf("after a restore at zero proxy-01 took %d of the next 100 picks and the others at most %d; want the pile-on (≥ 20 against ≤ 11)", delta("proxy-01"), others)
	}
	b.shot(ctx, "assign-03-pile-on")

	// A steady load: picks per second show, and the counts stay level.
	b.do(ctx, "start a load", click("#assign-load"),
		waitFor(`Number(document.getElementById("assign-picks-per-s").textContent.replace(/,/g, "")) > 0`))
	b.shot(ctx, "assign-04-load")
	b.do(ctx, "stop the load", click("#assign-load"), waitFor(`window.afloat.assign && !window.afloat.assign.load.running`))

	// The page matches the pool in Redis.
	res, err := http.Get(base + "/api/assign")
	if err != nil {
		t.Fatal(err)
	}
	var st assignState
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var pairs [][2]any
	for _, m := range st.Members {
		pairs = append(pairs, [2]any{m.Name, m.Count})
	}
	want, _ := json.Marshal(pairs)
	api := string(want)
	b.do(ctx, "let the page catch up", waitFor(fmt.Sprintf(`JSON.stringify(window.afloat.assign.members.map((m) => [m.member, m.count])) === %q`, api)))

	// A slow network: polls answered 700 ms late, so that one is always in
	// flight when a member is removed. The stale answer must not be drawn
	// (it would flip the row back to "active", and a click meant for
	// "restore" would remove it again).
	evaluate[bool](b, ctx, `(() => {
		const real = window.fetch;
		window.__realFetch = real;
		window.fetch = (url, opts) => real(url, opts).then((res) =>
			opts && opts.method ? res : new Promise((ok) => setTimeout(() => ok(res), 700)));
		window.__rows = [];
		window.__watch = new MutationObserver(() => {
			const tr = document.querySelector('#assign-table tr[data-member="proxy-03"]');
			window.__rows.push(tr ? tr.className : "gone");
		});
		// Every draw sets each row's class (a mutation even when it is
		// unchanged), so this records proxy-03's state once per draw.
		window.__watch.observe(document.querySelector("#assign-table tbody"), { childList: true, subtree: true, attributes: true, attributeFilter: ["class"] });
		return true;
	})()`)
	b.do(ctx, "wait for a late poll", waitFor(`window.__rows.length > 0`))
	b.do(ctx, "remove proxy-03 while a poll is in flight", click(`#assign-table button[data-member="proxy-03"]`),
		waitFor(`window.__rows.includes("removed")`))
	from := evaluate[int](b, ctx, `window.__rows.indexOf("removed")`)
	b.do(ctx, "let three polls come back", waitFor(fmt.Sprintf(`window.__rows.length >= %d`, from+4)))
	if seen := evaluate[[]string](b, ctx, `window.__rows`)[from:]; slices.Contains(seen, "") {
		t.Errorf("a poll sent before the removal drew proxy-03 as active again: rows after the removal %q", seen)
	}
	b.do(ctx, "restore proxy-03", click(`#assign-table button[data-member="proxy-03"]`),
		waitFor(`document.querySelector('#assign-table tr[data-member="proxy-03"]').className === ""`))
	evaluate[bool](b, ctx, `(() => { window.__watch.disconnect(); window.fetch = window.__realFetch; return true; })()`)

	// Every message in Welsh and Tagalog: no key missing, no raw key.
	rawKey := regexp.MustCompile(`^[a-z_]+(\.[a-z0-9_-]+)+$`)
	for _, lang := range []string{"cy", "tl", "en"} {
		b.do(ctx, "switch language", choose("lang", lang), waitFor(fmt.Sprintf(`document.documentElement.lang === %q`, lang)))
		b.do(ctx, "remove a member", click(`#assign-table button[data-member="proxy-02"]`),
			waitFor(`document.querySelector('#assign-table tr[data-member="proxy-02"]').className === "removed"`))
		b.do(ctx, "restore it", click(`#assign-table button[data-member="proxy-02"]`),
			waitFor(`document.querySelector('#assign-table tr[data-member="proxy-02"]').className === ""`))
		want := catalogue(t, lang)["assign.state.active"]
		b.do(ctx, "redrawn in "+lang, waitFor(fmt.Sprintf(`document.querySelector('#assign-table tr[data-member="proxy-02"] td:nth-of-type(3)').textContent === %q`, want)))
		missing := evaluate[[]string](b, ctx, `[...window.afloat.missing]`)
		if len(missing) > 0 {
			t.Errorf("%s: keys missing from the catalogue: %v", lang, missing)
		}
		texts := evaluate[[]string](b, ctx, `(() => { const w = document.createTreeWalker(document.getElementById("assign"), NodeFilter.SHOW_TEXT); const out = []; while (w.nextNode()) { const s = w.currentNode.textContent.trim(); if (s) out.push(s); } return out; })()`)
		for _, s := range texts {
			if rawKey.MatchString(s) {
				t.Errorf("%s: a raw key is shown: %q", lang, s)
			}
		}
		if lang != "en" {
			b.shot(ctx, "assign-05-"+lang)
		}
	}
	if csp := evaluate[[]string](b, ctx, `window.__csp || []`); len(csp) > 0 {
		t.Errorf("Content-Security-Policy violations: %v", csp)
	}
	b.noProblems()
}

// TestAssignLabReadOnlyEndToEnd: on a pool that was on the Redis before
// the console started, the page says, in every language, that it only
// shows it and how to allow changes, and every control that would change
// it is disabled; clicking them changes nothing.
func TestAssignLabReadOnlyEndToEnd(t *testing.T) {
	t.Parallel()
	srv := assigntest.Start(t)
	theirs := poolOnRedis(t, srv, "production", 3, "http://10.0.0.1:3128", "http://10.0.0.2:3128")
	base := serveAssignConsole(t, srv, "production")
	b := newBrowser(t)
	ctx := b.ctx
	b.do(ctx, "open the assignment lab", chromedp.Navigate(base+"/#assign"), waitReady(),
		waitFor(`document.querySelectorAll("#assign-table tbody tr").length === 2`))
	controls := `["assign-pick-1", "assign-pick-100", "assign-rate", "assign-load", "assign-reset", "assign-policy"].map((id) => document.getElementById(id))
		.concat([...document.querySelectorAll("#assign-table button")])`
	for _, lang := range []string{"cy", "tl", "en"} {
		b.do(ctx, "switch language", choose("lang", lang), waitFor(fmt.Sprintf(`document.documentElement.lang === %q`, lang)))
		want := strings.ReplaceAll(catalogue(t, lang)["assign.read_only"], "{pool}", "production")
		b.do(ctx, "the read-only note in "+lang, waitFor(fmt.Sprintf(`!document.getElementById("assign-read-only").hidden && document.getElementById("assign-read-only").textContent === %q`, want)))
		if n := evaluate[int](b, ctx, controls+`.filter((e) => !e.disabled).length`); n != 0 {
			t.Errorf("%s: %d controls that change the pool are enabled", lang, n)
		}
		if missing := evaluate[[]string](b, ctx, `[...window.afloat.missing]`); len(missing) > 0 {
			t.Errorf("%s: keys missing from the catalogue: %v", lang, missing)
		}
	}
	b.shot(ctx, "assign-06-read-only")
	evaluate[bool](b, ctx, "("+controls+").forEach((e) => e.click()) || true")
	st, err := theirs.Status(assigntest.Context(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Members {
		if m.Count != 3 || !m.Active {
			t.Errorf("the page changed a pool it does not own: %+v", m)
		}
	}
	b.noProblems()
}

// TestAssignLabNotOverFailureRecordsEndToEnd: opening the page on a pool
// that holds only failure records — which the lab did not make — the page
// asks to create it, is refused, and shows the pool read-only; the records
// stay (before, the lab took the pool for absent and replaced it).
func TestAssignLabNotOverFailureRecordsEndToEnd(t *testing.T) {
	srv := assigntest.Start(t)
	c := assignClient(t, srv.URL)
	theirs, _ := assign.New(c, "records")
	if _, err := theirs.RecordFailure(assigntest.Context(t, 5*time.Second), "http://10.0.0.9:3128", 0); err != nil {
		t.Fatal(err)
	}
	base := serveAssignConsole(t, srv, "records")
	b := newBrowser(t)
	ctx := b.ctx
	want := strings.ReplaceAll(catalogue(t, "en")["assign.read_only"], "{pool}", "records")
	b.do(ctx, "open the assignment lab", chromedp.Navigate(base+"/#assign"), waitReady(),
		waitFor(fmt.Sprintf(`!document.getElementById("assign-read-only").hidden && document.getElementById("assign-read-only").textContent === %q`, want)))
	if n := evaluate[int](b, ctx, `document.querySelectorAll("#assign-table tbody tr").length`); n != 0 {
		t.Errorf("%d rows for a pool with no member", n)
	}
	if evaluate[bool](b, ctx, `!document.getElementById("assign-pick-1").disabled`) {
		t.Error("the pick button is enabled on a pool the lab did not make")
	}
	if n := srv.MustDo("HLEN", "afloat:assign:{records}:failures"); n != ":1" {
		t.Errorf("the failure records after the page opened: HLEN %s, want :1", n)
	}
	if n := srv.MustDo("EXISTS", "afloat:assign:{records}:counts", "afloat:assign:{records}:owner"); n != ":0" {
		t.Errorf("the page made keys of the pool: EXISTS %s", n)
	}
	b.noProblems()
}

// TestAssignLabSlowServerEndToEnd: when the console answers the lab's
// polls slower than it polls, the page waits for each answer before it
// sends the next poll. Polls sent on a fixed interval pile up without
// bound behind a slow server (Chromium queues requests for one address
// behind each other in its cache), each drawing a state older than the
// last.
func TestAssignLabSlowServerEndToEnd(t *testing.T) {
	t.Parallel()
	srv := assigntest.Start(t)
	poolOnRedis(t, srv, "slow", 0, "http://10.0.0.1:3128")
	console, err := url.Parse(serveAssignConsole(t, srv, "slow"))
	if err != nil {
		t.Fatal(err)
	}
	// A proxy in front of the console answers each poll a second late.
	proxy := httputil.NewSingleHostReverseProxy(console)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // polls cut off when the test ends
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/api/assign" {
			select {
			case <-time.After(time.Second):
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(slow.Close)

	b := newBrowser(t)
	ctx := b.ctx
	// The page's own count of the polls it has sent and not yet seen
	// answered.
	count := `window.polls = { inFlight: 0, most: 0, answered: 0 };
const fetchOf = window.fetch;
window.fetch = async (path, opts) => {
  if (String(path) !== "/api/assign" || (opts && opts.method)) return fetchOf(path, opts);
  window.polls.most = Math.max(window.polls.most, ++window.polls.inFlight);
  try {
    return await fetchOf(path, opts);
  } finally {
    window.polls.inFlight--;
    window.polls.answered++;
  }
};`
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: count}); err != nil {
		t.Fatal(err)
	}
	b.do(ctx, "open the assignment lab", chromedp.Navigate(slow.URL+"/#assign"), waitReady(),
		waitFor(`document.querySelectorAll("#assign-table tbody tr").length === 1`))
	b.do(ctx, "three polls answered, one at a time", waitFor(`window.polls.answered >= 3 || window.polls.most > 1`))
	if most := evaluate[int](b, ctx, `window.polls.most`); most > 1 {
		t.Fatalf("%d polls in flight at once: the page polls before the last poll is answered", most)
	}
	b.do(ctx, "switch language while polls are slow", choose("lang", "cy"), waitFor(`document.documentElement.lang === "cy"`))
	b.noProblems()
}

// TestAssignLLMDemoEndToEnd plays the lab's LLM demo by its controls, in
// English, Welsh and Tagalog, on a real redis-server: four API keys with 20
// requests a minute in bursts of 5, key-3 answering every third request
// with 429 and Retry-After 30 s. A hundred picks spread over the keys,
// key-3 cools down (its row says so, with its streak and limit), then every
// key is out and a pick is refused with Retry-After; the last resort
// "earliest" picks anyway. A member cooled by hand shows as cooling. The
// chart is there with its caption in the language, the lease view shows a
// lease and its full member, and axe finds nothing
// serious.
func TestAssignLLMDemoEndToEnd(t *testing.T) {
	t.Parallel()
	base, _ := startAssignConsole(t)
	b, ctx := openAssignLab(t, base)
	cell := func(member string, i int) string {
		return evaluate[string](b, ctx, fmt.Sprintf(`document.querySelector('#assign-table tr[data-member=%q]').cells[%d].textContent`, member, i))
	}
	langs := someLanguages(testing.Short(), "tl", "en", "cy") // Tagalog alone in make test
	for _, lang := range langs {
		cat := catalogue(t, lang)
		b.do(ctx, "switch to "+lang, choose("lang", lang), waitFor(fmt.Sprintf(`document.documentElement.lang === %q`, lang)))
		// The lease view: every member capped at one lease in flight, one
		// lease acquired (its member full), then released.
		b.do(ctx, lang+": cap every member at 1", choose("assign-cap", "1"),
			waitFor(`window.afloat.assign.members.every((m) => m.concurrency === 1)`))
		b.do(ctx, lang+": acquire a lease", click("#assign-acquire"),
			waitFor(`window.afloat.assign.open_leases === 1 && document.querySelectorAll("#assign-leases button[data-lease]").length === 1`))
		leased := evaluate[string](b, ctx, `window.afloat.assign.leases[0].member`)
		if got := cell(leased, 8); got != "1 / 1" {
			t.Errorf("%s: %s's in flight / cap %q, want 1 / 1", lang, leased, got)
		}
		if got, want := cell(leased, 3), cat["assign.state.full"]; got != want {
			t.Errorf("%s: %s's state %q, want %q", lang, leased, got, want)
		}
		if s := b.text(ctx, "#assign-leases tbody"); !strings.Contains(s, leased) {
			t.Errorf("%s: the leases table says %q, want %s's lease", lang, s, leased)
		}
		b.checkAxe(ctx, lang+": a lease open")
		b.do(ctx, lang+": release it", click("#assign-leases button[data-lease]"),
			waitFor(`window.afloat.assign.open_leases === 0`))
		if s := b.text(ctx, "#assign-leases tbody"); s != cat["assign.no_leases"] {
			t.Errorf("%s: the leases table with none open says %q, want %q", lang, s, cat["assign.no_leases"])
		}
		b.do(ctx, lang+": no cap", choose("assign-cap", "0"),
			waitFor(`window.afloat.assign.members.every((m) => !m.concurrency)`))
		b.do(ctx, lang+": start the LLM demo", click("#assign-llm"),
			waitFor(`window.afloat.assign.llm && document.querySelectorAll("#assign-table tbody tr").length === 4 && !document.getElementById("assign-llm-help").hidden`))
		if s := b.text(ctx, "#assign-llm-help"); !strings.Contains(s, "key-3") || !strings.Contains(s, "429") {
			t.Errorf("%s: the demo's help says %q", lang, s)
		}
		b.do(ctx, lang+": pick 100", click("#assign-pick-100"),
			waitFor(`window.afloat.assign.members.every((m) => m.cooling_until) && window.afloat.assign.total > 0`))
		if s := b.text(ctx, "#assign-status"); !strings.Contains(s, "key-3") || !strings.Contains(s, "429") {
			t.Errorf("%s: after 100 picks the status says %q, want key-3's 429", lang, s)
		}
		if got, want := cell("key-3", 3), cat["assign.state.cooling"]; got != want {
			t.Errorf("%s: key-3's state %q, want %q", lang, got, want)
		}
		if got := cell("key-3", 5); got == "–" || !strings.Contains(got, "3") {
			t.Errorf("%s: key-3's cooldown column %q, want about 30 s left", lang, got)
		}
		if got := cell("key-3", 6); got != "1" {
			t.Errorf("%s: key-3's failures in a row %q, want 1", lang, got)
		}
		if got := cell("key-1", 7); !strings.Contains(got, "20") || !strings.Contains(got, "60") {
			t.Errorf("%s: key-1's limit %q, want 20 per 60 s", lang, got)
		}
		total := evaluate[int](b, ctx, `window.afloat.assign.total`)
		b.do(ctx, lang+": a pick with every key out", click("#assign-pick-1"),
			waitFor(`document.getElementById("assign-status").textContent.includes("Retry-After")`))
		b.checkAxe(ctx, lang+": the LLM demo, every key out")
		b.do(ctx, lang+": last resort earliest", choose("assign-last-resort", "earliest"),
			waitFor(`window.afloat.assign.last_resort === "earliest"`))
		b.do(ctx, lang+": a pick with the last resort", click("#assign-pick-1"),
			waitFor(fmt.Sprintf(`window.afloat.assign.total === %d`, total+1)))
		if got, want := b.text(ctx, "#chart-assign-picks-cap"), cat["assign.chart.title"]; got != want {
			t.Errorf("%s: the chart's caption %q, want %q", lang, got, want)
		}
		b.shot(ctx, "assign-llm-"+lang)
		b.do(ctx, lang+": back to the proxies", choose("assign-last-resort", "fail"),
			waitFor(`window.afloat.assign.last_resort === "fail"`), click("#assign-llm"),
			waitFor(`!window.afloat.assign.llm && document.querySelectorAll("#assign-table tbody tr").length === 8`))
		if missing := evaluate[[]string](b, ctx, `[...window.afloat.missing]`); len(missing) > 0 {
			t.Errorf("%s: keys missing from the catalogue: %v", lang, missing)
		}
	}
	b.do(ctx, "cool proxy-02 by hand", choose("assign-cool-for", "60"), click(`#assign-table button[data-cool="proxy-02"]`),
		waitFor(`document.querySelector('#assign-table tr[data-member="proxy-02"]').className === "cooling"`))
	if s := b.text(ctx, "#assign-status"); !strings.Contains(s, "proxy-02") || !strings.Contains(s, "60") {
		t.Errorf("after a cooldown by hand the status says %q", s)
	}
	b.do(ctx, "pick 100 while proxy-02 cools", click("#assign-pick-100"), waitFor(`window.afloat.assign.total >= 100`))
	if got := cell("proxy-02", 1); got != "0" {
		t.Errorf("proxy-02 was picked %s times while cooling", got)
	}
	if csp := evaluate[[]string](b, ctx, `window.__csp || []`); len(csp) > 0 {
		t.Errorf("Content-Security-Policy violations: %v", csp)
	}
	// The pick with every key out is answered 429, as a router's would
	// be, and Chromium logs each refused request as an error: those, one
	// a language, are expected, and nothing else.
	b.mu.Lock()
	refused := 0
	b.problems = slices.DeleteFunc(b.problems, func(p string) bool {
		ok := strings.Contains(p, "status of 429 (Too Many Requests)")
		if ok {
			refused++
		}
		return ok
	})
	b.mu.Unlock()
	if refused != len(langs) {
		t.Errorf("%d requests refused with 429, want %d (one a language)", refused, len(langs))
	}
	b.noProblems()
}
