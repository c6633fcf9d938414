package web

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// quotaPeersJSON is what the quota lab's comparison reads from
// static/data/quota-peers.json (bench/quotapeers writes it).
type quotaPeersJSON struct {
	Date       string `json:"date"`
	Command    string `json:"command"`
	Go         string `json:"go"`
	Gubernator string `json:"gubernator"`
	CPUs       int    `json:"cpus"`
	LoadBefore string `json:"load_before"`
	Tenant     struct{ Rate, Burst float64 }
	Schedule   struct {
		DurationS  float64 `json:"duration_s"`
		ShiftS     float64 `json:"shift_s"`
		PartitionS float64 `json:"partition_s"`
		HealS      float64 `json:"heal_s"`
		Hot, Cut   string
	} `json:"schedule"`
	Seconds []float64 `json:"seconds"`
	Offered []float64 `json:"offered"`
	Systems []struct {
		ID          string  `json:"id"`
		WorstWindow float64 `json:"worst_window"`
		Utilization struct {
			Before, Shift, Partition, Healed float64
		} `json:"utilization"`
		Hot90S  *float64 `json:"hot90_s"`
		Latency struct {
			P50, P99 float64
		} `json:"latency_us"`
		PerSecond    []float64 `json:"per_second"`
		HotPerSecond []float64 `json:"hot_per_second"`
		Excess       []float64 `json:"excess"`
	} `json:"systems"`
	Throughput *struct {
		TargetP99MS float64 `json:"target_p99_ms"`
		Systems     []struct {
			ID            string  `json:"id"`
			DecisionsPerS float64 `json:"decisions_per_s"`
			P99MS         float64 `json:"p99_ms"`
		} `json:"systems"`
	} `json:"throughput"`
}

func quotaPeersResult(t testing.TB) quotaPeersJSON {
	t.Helper()
	raw, err := fs.ReadFile(static, "static/data/quota-peers.json")
	if err != nil {
		t.Fatal(err)
	}
	var r quotaPeersJSON
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("quota-peers.json: %v", err)
	}
	return r
}

// TestQuotaPeersResult checks the committed comparison: the four systems,
// series as long as the run, afloat's bound held (the claim the page and
// docs/benchmarks.md make), and the file served from the binary as JSON.
func TestQuotaPeersResult(t *testing.T) {
	r := quotaPeersResult(t)
	var ids []string
	for _, s := range r.Systems {
		ids = append(ids, s.ID)
		for name, xs := range map[string][]float64{"per_second": s.PerSecond, "hot_per_second": s.HotPerSecond, "excess": s.Excess} {
			if len(xs) != len(r.Seconds) {
				t.Errorf("%s: %s has %d seconds, the run %d", s.ID, name, len(xs), len(r.Seconds))
			}
		}
		if s.ID == "afloat" && s.WorstWindow > 0 {
			t.Errorf("afloat's worst window is %+.0f tokens over R·Δ + B: the bound must hold", s.WorstWindow)
		}
	}
	if want := []string{"afloat", "gubernator_global", "gubernator_global_rate", "gubernator_default", "ratelimit_shared", "ratelimit_per_region", "naive"}; !slices.Equal(ids, want) {
		t.Errorf("systems %v, want %v", ids, want)
	}
	if r.Throughput == nil {
		t.Fatal("no throughput search in quota-peers.json")
	}
	var tps []string
	for _, s := range r.Throughput.Systems {
		tps = append(tps, s.ID)
		if s.DecisionsPerS < 0 || (s.DecisionsPerS > 0 && (s.P99MS <= 0 || s.P99MS > r.Throughput.TargetP99MS)) {
			t.Errorf("throughput: %s: %v decisions/s at p99 %v ms: a rate that held has a p99 in (0, %v] ms", s.ID, s.DecisionsPerS, s.P99MS, r.Throughput.TargetP99MS)
		}
	}
	if want := []string{"afloat_rls", "afloat_http", "ratelimit", "gubernator_global", "gubernator_default"}; !slices.Equal(tps, want) {
		t.Errorf("throughput systems %v, want %v", tps, want)
	}
	if len(r.Offered) != len(r.Seconds) || float64(len(r.Seconds)) != math.Ceil(r.Schedule.DurationS) {
		t.Errorf("%d offered, %d seconds, a run of %v s", len(r.Offered), len(r.Seconds), r.Schedule.DurationS)
	}
	if !strings.HasPrefix(r.Command, "cd bench/quotapeers && go run .") {
		t.Errorf("command %q", r.Command)
	}
	base := startConsole(t)
	res, err := http.Get(base + "/static/data/quota-peers.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") || len(body) == 0 {
		t.Errorf("GET /static/data/quota-peers.json: %d %q, %d bytes", res.StatusCode, res.Header.Get("Content-Type"), len(body))
	}
}

// TestQuotaPeersEndToEnd opens the quota lab in headless Chromium in
// English, Welsh and Tagalog and checks the comparison with Gubernator:
// every chart draws the embedded result's numbers, the summary table and
// the rate chart's data table read as the JSON does, no catalogue key is
// missing, and axe finds no serious or critical violation.
func TestQuotaPeersEndToEnd(t *testing.T) {
	t.Parallel()
	r := quotaPeersResult(t)
	base := startConsole(t)
	b := newBrowser(t)
	ctx := b.ctx
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch}); err != nil {
		t.Fatal(err)
	}
	b.do(ctx, "open the quota lab", chromedp.Navigate(base+"/#quota"), waitReady(),
		waitFor(`document.querySelectorAll("#quota-peers-charts .uplot").length === 3`))
	type plot struct {
		ID   string       `json:"id"`
		Data [][]*float64 `json:"data"`
	}
	for _, lang := range languages {
		cat := catalogue(t, lang)
		b.do(ctx, "switch to "+lang, choose("lang", lang), waitFor(fmt.Sprintf(`document.documentElement.lang === %q`, lang)),
			waitFor(fmt.Sprintf(`document.querySelector("#quota-peers-table thead th") && document.querySelector("#quota-peers-table thead th").textContent === %q`, cat["quota.peers.col.system"])))

		// Every chart draws the JSON's numbers: the seconds, then its
		// reference lines, then a series per system.
		plots := evaluate[[]plot](b, ctx, `window.afloat.quotaPeers.plots()`)
		if len(plots) != 3 {
			t.Fatalf("%s: %d charts, want 3", lang, len(plots))
		}
		series := func(p plot, k int, want []float64) {
			t.Helper()
			if len(p.Data[k]) != len(want) {
				t.Fatalf("%s: %s series %d draws %d points, the JSON has %d", lang, p.ID, k, len(p.Data[k]), len(want))
			}
			for i, w := range want {
				if p.Data[k][i] == nil || math.Abs(*p.Data[k][i]-w) > 1e-9 {
					t.Fatalf("%s: %s series %d at %d draws %v, the JSON has %v", lang, p.ID, k, i, p.Data[k][i], w)
				}
			}
		}
		flat := func(v float64) []float64 {
			out := make([]float64, len(r.Seconds))
			for i := range out {
				out[i] = v
			}
			return out
		}
		for _, p := range plots {
			series(p, 0, r.Seconds)
			switch p.ID {
			case "quota-peers-rate":
				series(p, 1, r.Offered)
				series(p, 2, flat(r.Tenant.Rate))
				for i, s := range r.Systems {
					series(p, 3+i, s.PerSecond)
				}
			case "quota-peers-hot":
				series(p, 1, flat(r.Tenant.Rate))
				for i, s := range r.Systems {
					series(p, 2+i, s.HotPerSecond)
				}
			case "quota-peers-excess":
				series(p, 1, flat(r.Tenant.Burst))
				for i, s := range r.Systems {
					series(p, 2+i, s.Excess)
				}
			default:
				t.Fatalf("%s: unexpected chart %s", lang, p.ID)
			}
		}

		// The summary table: a row a system, named in the language, its
		// cells the JSON's numbers as rounded on the page.
		rows := evaluate[[][]string](b, ctx, `[...document.querySelectorAll("#quota-peers-table tbody tr")].map((tr) => [...tr.cells].map((c) => c.textContent))`)
		if len(rows) != len(r.Systems) {
			t.Fatalf("%s: the table has %d rows, the JSON %d systems", lang, len(rows), len(r.Systems))
		}
		for i, s := range r.Systems {
			verdict := cat["quota.peers.held"]
			if s.WorstWindow > 0 {
				verdict = cat["quota.peers.exceeded"]
			}
			hot := cat["quota.peers.never"]
			if s.Hot90S != nil {
				hot = strconv.FormatFloat(*s.Hot90S, 'f', 2, 64)
			}
			u := s.Utilization
			// Text cells read exactly; a number within half a unit of its
			// last digit shown of the JSON's (JavaScript and Go round ties
			// apart).
			text := map[int]string{0: cat["quota.peers.sys."+s.ID], 2: verdict}
			nums := map[int][2]float64{ // value, decimals shown
				1: {s.WorstWindow, 0}, 3: {100 * u.Before, 0}, 4: {100 * u.Shift, 0}, 5: {100 * u.Partition, 0}, 6: {100 * u.Healed, 0},
				8: {s.Latency.P50, 1}, 9: {s.Latency.P99, 1},
			}
			if s.Hot90S == nil {
				text[7] = hot
			} else {
				nums[7] = [2]float64{*s.Hot90S, 2}
			}
			if len(rows[i]) != 10 {
				t.Fatalf("%s: row %d has %d cells, want 10", lang, i, len(rows[i]))
			}
			for k, want := range text {
				if rows[i][k] != want {
					t.Errorf("%s: %s's cell %d reads %q, want %q", lang, s.ID, k, rows[i][k], want)
				}
			}
			for k, want := range nums {
				got, err := strconv.ParseFloat(strings.TrimPrefix(rows[i][k], "+"), 64)
				if err != nil || math.Abs(got-want[0]) > 0.5*math.Pow(10, -want[1])+1e-9 {
					t.Errorf("%s: %s's cell %d reads %q, the JSON has %v", lang, s.ID, k, rows[i][k], want[0])
				}
			}
			if s.WorstWindow > 0.5 && !strings.HasPrefix(rows[i][1], "+") {
				t.Errorf("%s: %s's worst window %q has no + over the bound", lang, s.ID, rows[i][1])
			}
		}
		if rows[0][2] != cat["quota.peers.held"] {
			t.Errorf("%s: afloat's bound reads %q, want %q", lang, rows[0][2], cat["quota.peers.held"])
		}

		// The throughput table: a row a service, named in the language,
		// its rate and p99 as the JSON has them.
		tpRows := evaluate[[][]string](b, ctx, `[...document.querySelectorAll("#quota-peers-tp tbody tr")].map((tr) => [...tr.cells].map((c) => c.textContent))`)
		if len(tpRows) != len(r.Throughput.Systems) {
			t.Fatalf("%s: the throughput table has %d rows, the JSON %d services", lang, len(tpRows), len(r.Throughput.Systems))
		}
		for i, s := range r.Throughput.Systems {
			want := []string{cat["quota.peers.tp.sys."+s.ID], strconv.FormatFloat(s.DecisionsPerS, 'f', 0, 64), strconv.FormatFloat(s.P99MS, 'f', 3, 64)}
			if s.DecisionsPerS == 0 {
				want[1], want[2] = cat["quota.peers.tp.none"], "–"
			}
			if !slices.Equal(tpRows[i], want) {
				t.Errorf("%s: throughput row %d reads %q, want %q", lang, i, tpRows[i], want)
			}
		}

		// The rate chart's data table, opened: a row a second, the
		// JSON's numbers.
		cellsOf := evaluate[[][]string](b, ctx, `(() => { const d = document.querySelector("#chart-quota-peers-rate details"); d.open = true; d.dispatchEvent(new Event("toggle")); return [...d.querySelectorAll("tbody tr")].map((tr) => [...tr.cells].map((c) => c.textContent)); })()`)
		if len(cellsOf) != len(r.Seconds) {
			t.Fatalf("%s: the rate chart's table has %d rows, the run %d seconds", lang, len(cellsOf), len(r.Seconds))
		}
		for i := range r.Seconds {
			want := []float64{r.Offered[i], r.Tenant.Rate}
			for _, s := range r.Systems {
				want = append(want, s.PerSecond[i])
			}
			for k, w := range want {
				if got := cellsOf[i][1+k]; got != strconv.FormatFloat(w, 'f', 0, 64) {
					t.Fatalf("%s: the rate table's row %d, column %d reads %q, the JSON has %v", lang, i, 1+k, got, w)
				}
			}
		}
		b.checkAxe(ctx, lang+": the quota lab's comparison, a table open")
		if missing := evaluate[[]string](b, ctx, `[...window.afloat.missing]`); len(missing) > 0 {
			t.Errorf("%s: keys missing from the catalogue: %v", lang, missing)
		}
		b.do(ctx, lang+": close the table", chromedp.Evaluate[chromedp.Void](`document.querySelector("#chart-quota-peers-rate details").open = false`))
		if lang == "en" {
			viewShot(b, ctx, "quota-peers", "#quota-peers-h", 1500) // docs/quota-peers.png
		}
	}
	if csp := evaluate[[]string](b, ctx, `window.__csp || []`); len(csp) > 0 {
		t.Errorf("Content-Security-Policy violations: %v", csp)
	}
	b.noProblems()
}
