package web

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// shareVectorsJS runs the shared vectors against the page's own share.js,
// given the vectors as JSON and the server's scenarios and controls, and
// returns what disagrees.
const shareVectorsJS = `(async (v) => {
  const share = await import("/static/js/share.js");
  const info = window.afloat.state.info;
  const bad = [];
  // Object.is tells -0 from 0, which a link can carry.
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b) &&
    a.actions.every((x, i) => Object.is(x.value, b.actions[i].value));
  for (const c of v.encode) {
    const got = share.encodeRun(c.run, info.controls);
    if (got !== c.query) bad.push("encode " + c.name + ": " + got);
    const back = share.decodeRun(new URLSearchParams(c.query), info);
    if (back.error || !same(back.run, c.run)) bad.push("encode " + c.name + ": read back " + JSON.stringify(back));
  }
  for (const c of v.decode) {
    const back = share.decodeRun(new URLSearchParams(c.query), info);
    if (back.error || !same(back.run, c.run)) bad.push("decode " + c.name + ": " + JSON.stringify(back));
  }
  for (const c of v.refuse) {
    const back = share.decodeRun(new URLSearchParams(c.query), info);
    if (!back.error) bad.push("refuse " + c.name + ": accepted " + JSON.stringify(back.run));
    else if (back.error.field !== c.field) bad.push("refuse " + c.name + ": field " + back.error.field + ", want " + c.field);
  }
  return bad;
})(%s)`

// TestShareCodecInBrowser holds the console's share.js to the vectors
// sim/share_test.go holds sim/share.go to (sim/testdata/share), in
// Chromium, as the page loads it: the two codecs write the same canonical
// links and read and refuse the same ones.
func TestShareCodecInBrowser(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "sim", "testdata", "share", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	base := startConsole(t)
	b := newBrowser(t)
	b.do(b.ctx, "open the console", chromedp.Navigate(base+"/"), waitReady())
	bad := evaluateAsync[[]string](b, b.ctx, fmt.Sprintf(shareVectorsJS, raw))
	for _, s := range bad {
		t.Error(s)
	}
	b.noProblems()
}

// evaluateAsync is evaluate for an expression whose value is a promise.
func evaluateAsync[T any](b *browser, ctx context.Context, expr string) T {
	b.t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %.60s: %v (browser problems: %v)", expr, err, b.problems)
	}
	return v
}
