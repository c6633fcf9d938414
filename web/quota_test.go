package web

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/chaos"
)

// quotaLabBody is the lab's run with every kind of action.
const quotaLabBody = `{"seed": 7, "rate": 500, "burst": 6000, "mode": "hard", "lease_s": 10, "minutes": 3,
	"traffic": {"eu": 72, "us": 36, "ap": 12},
	"actions": [
		{"at_s": 30, "action": "shift", "traffic": {"eu": 0, "us": 120, "ap": 0}},
		{"at_s": 40, "action": "partition", "region": "us"},
		{"at_s": 70, "action": "heal", "region": "us"},
		{"at_s": 80, "action": "crash", "down_s": 5},
		{"at_s": 100, "action": "pause", "down_s": 3, "wake_s": 8},
		{"at_s": 110, "action": "skew", "node": "eu", "drift_ppm": -500},
		{"at_s": 110, "action": "skew", "node": "coordinator", "drift_ppm": 300}
	], "closeup": 0}`

func postQuota(t testing.TB, h http.Handler, body string) (int, http.Header, []byte) {
	t.Helper()
	req := localRequest("POST", "/api/quota/run", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Header(), rec.Body.Bytes()
}

func decodeQuotaResponse(t *testing.T, raw []byte) quotaResponse {
	t.Helper()
	var r quotaResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%v: %.200s", err, raw)
	}
	return r
}

// TestQuotaRunIsTheHarness: the answer is the chaos harness's own run of
// the same configuration — the same checker verdict and the same totals —
// drawn in frames that add up to it.
func TestQuotaRunIsTheHarness(t *testing.T) {
	h := Handler(DefaultConfig())
	code, _, raw := postQuota(t, h, quotaLabBody)
	if code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	got := decodeQuotaResponse(t, raw)

	// The same run, straight from the package.
	acts := []chaos.Action{
		{At: 30 * time.Second, Kind: chaos.ActShift, Rates: map[string]float64{"eu": 0, "us": 600, "ap": 0}},
		{At: 40 * time.Second, Kind: chaos.ActPartition, Region: "us"},
		{At: 70 * time.Second, Kind: chaos.ActHeal, Region: "us"},
		{At: 80 * time.Second, Kind: chaos.ActCrash, Down: 5 * time.Second},
		{At: 100 * time.Second, Kind: chaos.ActPause, Down: 3 * time.Second, Wake: 8 * time.Second},
		{At: 110 * time.Second, Kind: chaos.ActSkew, Region: "eu", Drift: -500e-6},
		{At: 110 * time.Second, Kind: chaos.ActSkew, Drift: 300e-6},
	}
	cfg := chaos.Config{Seed: 7, Duration: 3 * time.Minute, Tenant: quota.Tenant{Name: "acme", LeaseDuration: 10 * time.Second}}
	sch, err := chaos.Script(cfg, map[string]float64{"eu": 360, "us": 180, "ap": 60}, acts)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Schedule = sch
	sum, err := chaos.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got.Verdict.Held != sum.OK() || got.Verdict.Violations != sum.Violations || got.Verdict.WorstExcess != sum.WorstExcess ||
		got.Summary.Admitted != sum.Admitted || got.Summary.Refused != sum.Rejected || got.Summary.Leases != sum.Leases || got.Summary.Epochs != sum.Epochs {
		t.Fatalf("the API's run differs from the harness's:\n api %+v %+v\n run %+v", got.Verdict, got.Summary, sum)
	}
	if !got.Verdict.Held || got.Summary.Epochs != 3 {
		t.Fatalf("verdict %+v, %d epochs: want the bound held across a crash and a pause", got.Verdict, got.Summary.Epochs)
	}

	// Frames: a second each, adding up to the run; the worst window drawn is
	// the checker's.
	if len(got.Frames) != 180 || got.Step != 1 || got.Seconds != 180 {
		t.Fatalf("%d frames of %v s over %d s, want 180 of 1 s", len(got.Frames), got.Step, got.Seconds)
	}
	var admitted float64
	worst := 0.0
	for i, f := range got.Frames {
		if f.T != float64(i) || len(f.Regions) != 3 {
			t.Fatalf("frame %d at %v with %d regions", i, f.T, len(f.Regions))
		}
		admitted += f.Admitted
		worst = math.Max(worst, f.Excess)
	}
	if math.Abs(admitted-float64(sum.Admitted)) > 1e-6 {
		t.Fatalf("the frames admit %v tokens, the run %d", admitted, sum.Admitted)
	}
	if want := math.Max(0, sum.WorstExcess+6000); math.Abs(worst-want) > 1e-6 {
		t.Fatalf("the frames' worst window is %v beyond R·Δ, the checker's %v", worst, want)
	}
	// What the page explains is in the frames: us refuses right after the
	// shift, holds no lease ten seconds into its partition, and no
	// coordinator serves during the crash.
	if f := got.Frames[30].Regions[1]; f.Refused == 0 || f.Demand != 600 {
		t.Errorf("us in the second of the shift: %+v, want refusals at a demand of 600", f)
	}
	if f := got.Frames[52].Regions[1]; !f.Cut || f.Lease != 0 || f.Admitted != 0 {
		t.Errorf("us 12 s into its partition: %+v, want cut off, no lease, nothing admitted (hard mode)", f)
	}
	if !got.Frames[81].Down || got.Frames[86].Down || got.Frames[81].Epoch != 1 || got.Frames[86].Epoch != 2 {
		t.Errorf("the crash at 80 s (successor at 85 s) is not in the frames")
	}
	// The close-up: the shift, every 100 ms, from 2 s before to 15 s after.
	c := got.Closeup
	if c == nil || c.Action != 0 || c.From != 28 || c.Step != 0.1 || len(c.Frames) != 170 {
		t.Fatalf("close-up %+v, want action 0 from 28 s, 170 frames of 0.1 s", c)
	}
	// The share link's query says the same run.
	q, err := url.ParseQuery(got.Share)
	if err != nil || q.Get("lab") != "quota" || q.Get("seed") != "7" || q.Get("traffic") != "72:36:12" ||
		q.Get("actions") != "30:shift:0:120:0,40:partition:us,70:heal:us,80:crash:5,100:pause:3:8,110:skew:eu:-500,110:skew:coordinator:300" {
		t.Errorf("share %q", got.Share)
	}
}

// TestQuotaRunIsPure: the same request gives the same answer, byte for
// byte; an action leaves every frame before it as it was.
func TestQuotaRunIsPure(t *testing.T) {
	h := Handler(DefaultConfig())
	body := `{"seed": 3, "minutes": 2, "actions": [{"at_s": 20, "action": "partition", "region": "eu"}]}`
	_, _, a := postQuota(t, h, body)
	_, _, b := postQuota(t, h, body)
	if !bytes.Equal(a, b) {
		t.Fatal("the same request gave two answers")
	}
	more := `{"seed": 3, "minutes": 2, "actions": [{"at_s": 20, "action": "partition", "region": "eu"}, {"at_s": 45, "action": "shift", "traffic": {"ap": 200}}]}`
	_, _, c := postQuota(t, h, more)
	ra, rc := decodeQuotaResponse(t, a), decodeQuotaResponse(t, c)
	for i := range 45 {
		if x, y := mustJSON(t, ra.Frames[i]), mustJSON(t, rc.Frames[i]); !bytes.Equal(x, y) {
			t.Fatalf("second %d changed when an action was added at 45 s:\n%s\n%s", i, x, y)
		}
	}
	if bytes.Equal(mustJSON(t, ra.Frames[45:]), mustJSON(t, rc.Frames[45:])) {
		t.Fatal("the shift at 45 s changed nothing")
	}
	if rc.Request.Mode != "hard" || rc.Request.Rate != 500 || rc.Request.Burst != 6000 || rc.Request.Lease != 10 || rc.Request.Closeup != 1 {
		t.Fatalf("defaults: %+v", rc.Request)
	}
}

// TestQuotaRunRefuses: every field is checked, the answer names it and
// its range, and nothing runs.
func TestQuotaRunRefuses(t *testing.T) {
	h := Handler(DefaultConfig())
	for i, tc := range []struct {
		body, field, want string
	}{
		{`{"seed": -1}`, "seed", "seed -1: want an integer from 0 to 4294967295"},
		{`{"rate": 5000}`, "rate", "rate 5000: want an integer from 10 to 1000 tokens a second"},
		{`{"rate": 2.5}`, "rate", "from 10 to 1000"},
		{`{"burst": 1}`, "burst", "from 10 to 100000"},
		{`{"mode": "soft"}`, "mode", `want "hard" or "best-effort"`},
		{`{"emergency": 100}`, "emergency", "hard mode has no emergency allowance"},
		{`{"mode": "best-effort", "emergency": 0}`, "emergency", "from 1 to 1000"},
		{`{"mode": "best-effort", "burst": 50, "emergency": 60}`, "emergency", "from 1 to 50"},
		{`{"lease_s": 1}`, "lease_s", "from 2 to 60 seconds"},
		{`{"minutes": 11}`, "minutes", "from 1 to 10"},
		{`{"traffic": {"eu": 301}}`, "traffic.eu", "want a number from 0 to 300"},
		{`{"traffic": {"eu": 200, "us": 200}}`, "traffic", "400 % of R in all: want at most 300 %"},
		{`{"traffic": {"mars": 1}}`, "traffic.mars", `region "mars": want eu, us or ap`},
		{`{"traffic": [1, 2]}`, "traffic", "want an object of % of R by region"},
		{`{"actions": {}}`, "actions", "want an array of actions"},
		{`{"actions": [{"at_s": 1}]}`, "actions[0].action", "want one of shift, partition, heal, crash, pause, skew"},
		{`{"actions": [{"action": "crash", "down_s": 5}]}`, "actions[0].at_s", "at_s missing"},
		{`{"minutes": 1, "actions": [{"at_s": 60, "action": "crash", "down_s": 5}]}`, "actions[0].at_s", "from 0 to 59"},
		{`{"actions": [{"at_s": 9, "action": "crash"}]}`, "actions[0].down_s", "down_s missing"},
		{`{"actions": [{"at_s": 9, "action": "crash", "down_s": 0}]}`, "actions[0].down_s", "from 1 to 120"},
		{`{"actions": [{"at_s": 9, "action": "crash", "down_s": 5, "wake_s": 3}]}`, "actions[0].wake_s", "a crash takes at_s, action, down_s"},
		{`{"actions": [{"at_s": 9, "action": "pause", "down_s": 5, "wake_s": 500}]}`, "actions[0].wake_s", "from 1 to 120"},
		{`{"actions": [{"at_s": 9, "action": "partition", "region": "mars"}]}`, "actions[0].region", `want "eu", "us" or "ap"`},
		{`{"actions": [{"at_s": 9, "action": "skew", "node": "moon", "drift_ppm": 1}]}`, "actions[0].node", `or "coordinator"`},
		{`{"actions": [{"at_s": 9, "action": "skew", "node": "eu", "drift_ppm": 501}]}`, "actions[0].drift_ppm", "from -500 to 500 ppm"},
		{`{"actions": [{"at_s": 9, "action": "shift", "traffic": {"us": -1}}]}`, "actions[0].traffic.us", "from 0 to 300"},
		{`{"actions": [{"at_s": 9, "action": "heal", "region": "eu"}]}`, "actions[0].region", `"eu" is not cut off`},
		{`{"actions": [{"at_s": 9, "action": "partition", "region": "eu"}, {"at_s": 10, "action": "partition", "region": "eu"}]}`, "actions[1].region", "already cut off"},
		{`{"actions": [{"at_s": 20, "action": "shift", "traffic": {}}, {"at_s": 10, "action": "shift", "traffic": {}}]}`, "actions[1].at_s", "in order of time"},
		{`{"actions": [{"at_s": 9, "action": "pause", "down_s": 5, "wake_s": 10}, {"at_s": 12, "action": "crash", "down_s": 1}]}`, "actions[1].at_s", "still down or paused until 19s"},
		{`{"closeup": 0}`, "closeup", "from -1 to -1"},
		{`{"seed": 1, "seed": 2}`, "seed", "given more than once"},
		{`{"speed": 3}`, "speed", `unknown field "speed"`},
		{`[1]`, "", "malformed JSON"},
	} {
		code, _, raw := postQuota(t, h, tc.body)
		var e struct{ Error, Field string }
		json.Unmarshal(raw, &e)
		if code != 400 || e.Field != tc.field || !strings.Contains(e.Error, tc.want) {
			t.Errorf("step %d: %s = %d field %q %q; want 400, field %q, mentioning %q", i, tc.body, code, e.Field, e.Error, tc.field, tc.want)
		}
	}
	many := `{"actions": [` + strings.Repeat(`{"at_s": 1, "action": "shift", "traffic": {}},`, quotaMaxActions) + `{"at_s": 1, "action": "shift", "traffic": {}}]}`
	if code, _, raw := postQuota(t, h, many); code != 400 || !strings.Contains(string(raw), "51 actions: want at most 50") {
		t.Errorf("51 actions: %d %s", code, raw)
	}

	srv := newTestServer(t)
	if status, hdr, _ := call(t, srv, "GET", "/api/quota/run", "", nil); status != 405 || hdr.Get("Allow") != "POST" {
		t.Errorf("GET: %d Allow %q, want 405 and POST", status, hdr.Get("Allow"))
	}
	if status, _, _ := call(t, srv, "POST", "/api/quota/run", "text/plain", []byte(`{}`)); status != 403 {
		t.Errorf("a text/plain POST: %d, want 403 (what another site's page can send)", status)
	}
}

// TestQuotaRunsAreBounded: beyond quotaMaxComputing runs at once, a
// request waits for a slot, then gets 503 with Retry-After; one whose
// client has gone gets nothing and frees nothing it never took.
func TestQuotaRunsAreBounded(t *testing.T) {
	q := newQuotaLab(1 << 20)
	q.wait = time.Millisecond
	for range quotaMaxComputing {
		q.slots <- struct{}{} // the lab busy with as many runs as it takes
	}
	req := localRequest("POST", "/api/quota/run", strings.NewReader(`{"minutes": 1}`))
	rec := httptest.NewRecorder()
	q.run(rec, req)
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("a run beyond the limit: %d Retry-After %q, want 503 and 1", rec.Code, rec.Header().Get("Retry-After"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q.wait = time.Hour
	rec = httptest.NewRecorder()
	q.run(rec, localRequest("POST", "/api/quota/run", strings.NewReader(`{"minutes": 1}`)).WithContext(ctx))
	if rec.Code != 200 || rec.Body.Len() != 0 {
		t.Fatalf("a client that left got %d %q, want nothing written", rec.Code, rec.Body.String())
	}
	<-q.slots // a run ends: the next one runs
	rec = httptest.NewRecorder()
	q.run(rec, localRequest("POST", "/api/quota/run", strings.NewReader(`{"minutes": 1}`)))
	if rec.Code != 200 {
		t.Fatalf("with a slot free: %d %s", rec.Code, rec.Body.String())
	}
	if len(q.slots) != quotaMaxComputing-1 {
		t.Fatalf("%d slots taken after the run, want %d: the run must give its slot back", len(q.slots), quotaMaxComputing-1)
	}
}

// FuzzQuotaBody: no body makes the lab answer 5xx or anything but JSON,
// and what it accepts it runs.
func FuzzQuotaBody(f *testing.F) {
	for _, s := range []string{
		quotaLabBody,
		`{}`,
		`{"mode": "best-effort", "emergency": 1000, "burst": 1000, "minutes": 1}`,
		`{"minutes": 1, "traffic": {"eu": 300}, "actions": [{"at_s": 0, "action": "pause", "down_s": 120, "wake_s": 1}]}`,
		`{"minutes": 1, "actions": [{"at_s": 59, "action": "skew", "node": "coordinator", "drift_ppm": -500}], "closeup": -1}`,
		`{"actions": [null]}`,
		`{"traffic": {"eu": 1e400}}`,
		`{"seed": 1e3, "rate": 10}`,
		`{"minutes": 1, "actions": null, "seed": 1e-400}`,
		`{"minutes": 1, "actions": [{"at_s": 1e-400, "action": "crash", "down_s": 5}]}`,
	} {
		f.Add([]byte(s))
	}
	h := Handler(DefaultConfig())
	f.Fuzz(func(t *testing.T, body []byte) {
		// Keep each input fast: one minute at most, and little traffic.
		if !bytes.Contains(body, []byte(`"minutes": 1`)) && !bytes.Contains(body, []byte(`"minutes":1`)) {
			return
		}
		req := localRequest("POST", "/api/quota/run", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkAnswer(t, rec)
		if rec.Code == 200 {
			var r quotaResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || len(r.Frames) != r.Seconds {
				t.Fatalf("an accepted run: %v, %d frames for %d s", err, len(r.Frames), r.Seconds)
			}
		}
	})
}
