package web

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// axeSRI is the integrity axe-core publishes for axe.min.js 4.14.1
// (sri-history.json in the npm package).
const axeSRI = "sha256-KTSJmUUM3yhJqOcLeRL8LahahJ2jnA0NU5T1HUqe2Vw="

var axeSource = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile("testdata/axe/axe.min.js")
	return string(b), err
})

// TestAxeIsVendored: the axe-core the browser tests run is the published
// 4.14.1, unmodified.
func TestAxeIsVendored(t *testing.T) {
	src, err := axeSource()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(src))
	if got := "sha256-" + base64.StdEncoding.EncodeToString(sum[:]); got != axeSRI {
		t.Errorf("testdata/axe/axe.min.js: %s, want axe-core 4.14.1's %s", got, axeSRI)
	}
}

type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any  `json:"target"`
		HTML   string `json:"html"`
	} `json:"nodes"`
}

// axeRun runs axe-core once over the page as it is now and returns its
// violations, of every impact. Colour contrast, most of a run's cost, is
// checked on the English page only: the palette and the layout are the
// same in every language, and a language changes the words, not their
// colours. Rows of a table body past its twentieth are left out: a chart's
// data table has up to 600, made by one loop with one markup and one
// style, so twenty show whatever the rest would, and the other 580 were
// most of the cost of the runs over open tables. Target size (WCAG 2.2's
// 2.5.8, which axe leaves off by default) is checked too: a wrapped link
// too close to the next failed it in Tagalog.
const axeRun = `axe.run({exclude: [["tbody > tr:nth-child(n+21)"]]}, {resultTypes: ["violations"],
  rules: Object.assign({"target-size": {enabled: true}}, document.documentElement.lang === "en" ? {} : {"color-contrast": {enabled: false}})}).then((r) => r.violations
  .map((v) => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 4).map((n) => ({target: n.target, html: n.html.slice(0, 160)}))})))`

// checkAxe runs axe-core on the page as it stands and fails the test on
// any serious or critical violation, saying where and on what; it returns
// the number of moderate and minor ones, which it only reports.
func (b *browser) checkAxe(ctx context.Context, where string) int {
	b.t.Helper()
	src, err := axeSource()
	if err != nil {
		b.t.Fatal(err)
	}
	if !evaluate[bool](b, ctx, `typeof window.axe === "object"`) {
		evaluate[bool](b, ctx, src+";true")
	}
	minor := 0
	for _, v := range evaluateAsync[[]axeViolation](b, ctx, axeRun) {
		switch v.Impact {
		case "serious", "critical":
			var nodes []string
			for _, n := range v.Nodes {
				nodes = append(nodes, fmt.Sprint(n.Target)+" "+n.HTML)
			}
			b.t.Errorf("axe, %s: %s (%s): %s\n\t%s", where, v.ID, v.Impact, v.Help, strings.Join(nodes, "\n\t"))
		default:
			minor++
			b.t.Logf("axe, %s: %s (%s, reported only): %s, %d nodes", where, v.ID, v.Impact, v.Help, len(v.Nodes))
		}
	}
	return minor
}

// waitAxeable waits until the page has settled after a change: no request
// in flight and the fonts laid out.
func waitSettled() chromedp.Action[chromedp.Void] {
	return waitFor(`window.afloat && window.afloat.ready && !window.afloat.state.fetching && document.fonts.status === "loaded"`)
}
