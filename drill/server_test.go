package drill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/afloat/afloat/internal/vclock"
	"github.com/afloat/afloat/sim"
)

const testToken = "drill-token-0123456789"

// vc adapts the virtual clock to Clock.
type vc struct{ *vclock.Clock }

func (c vc) AfterFunc(d time.Duration, f func()) Timer { return c.Clock.AfterFunc(d, f) }

// startServer runs a drill of cfg's scenario on a free loopback port, on
// a virtual clock standing at t0.
func startServer(t *testing.T, scenario string, speed time.Duration) (*Server, *httptest.Server, *vclock.Clock) {
	t.Helper()
	clock := vclock.New(t0)
	cfg := DefaultConfig()
	cfg.Scenario, cfg.Seed, cfg.Speed, cfg.Token, cfg.Clock = scenario, 7, speed, testToken, vc{clock}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	t.Cleanup(s.Stop)
	return s, hs, clock
}

// post sends a lever's body with the content type and token given and
// returns the status and the decoded answer.
func post(t *testing.T, url, contentType, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/lever", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("POST /lever %s: %d, body not JSON: %v", body, resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

func getStatus(t *testing.T, url string) Status {
	t.Helper()
	resp, err := http.Get(url + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestDrillLeversOverHTTP: POST /lever takes a lever with the token and
// exactly JSON, and records it for the next minute; every bad request —
// an unknown lever, a value out of range, a wrong or missing token, a
// body that is not JSON, a lever after the end — gets a clear error
// naming the field, and changes nothing.
func TestDrillLeversOverHTTP(t *testing.T) {
	_, hs, clock := startServer(t, "bad-deploy", time.Second)
	clock.Advance(12500 * time.Millisecond) // minute 12 under way
	status, out := post(t, hs.URL, "application/json", testToken, `{"control": "rollback"}`)
	if status != 200 || out["clock"] != "09:13" || out["action"].(map[string]any)["minute"] != 13.0 {
		t.Fatalf("a rollback at 09:12: %d %v; want 200 and minute 13 (09:13)", status, out)
	}
	want := []sim.Action{sim.Press(13, sim.ControlRollback)}
	json := "application/json"
	for i, tc := range []struct {
		what, ct, token, body string
		status                int
		field, msg            string
	}{
		{"an unknown lever", json, testToken, `{"control": "reboot"}`, 400, "control", `unknown control "reboot"; want one of fleet_floor, autoscaling,`},
		{"a value out of range", json, testToken, `{"control": "fleet_floor", "value": 41}`, 400, "value", "fleet_floor takes an integer from 0 to 40, got 41"},
		{"a number for a switch", json, testToken, `{"control": "autoscaling", "value": 1}`, 400, "value", "autoscaling takes true or false, got 1"},
		{"a minute", json, testToken, `{"minute": 2, "control": "rollback"}`, 400, "minute", "the drill sets the minute"},
		{"a wrong token", json, "drill-token-0123456788", `{"control": "rollback"}`, 401, "Authorization", "a valid token is required"},
		{"no token", json, "", `{"control": "rollback"}`, 401, "Authorization", "Authorization: Bearer TOKEN"},
		{"a form", "application/x-www-form-urlencoded", testToken, `control=rollback`, 415, "Content-Type", "want application/json"},
		{"no content type", "", testToken, `{"control": "rollback"}`, 415, "Content-Type", "want application/json"},
		{"JSON with another parameter", "application/json; version=2", testToken, `{"control": "rollback"}`, 415, "Content-Type", "at most charset=utf-8"},
		{"not JSON", json, testToken, `rollback`, 400, "", "want an object like"},
	} {
		status, out := post(t, hs.URL, tc.ct, tc.token, tc.body)
		msg, _ := out["error"].(string)
		field, _ := out["field"].(string)
		if status != tc.status || field != tc.field || !strings.Contains(msg, tc.msg) {
			t.Errorf("step %d: %s: %d, field %q, %q; want %d, field %q, saying %q", i, tc.what, status, field, msg, tc.status, tc.field, tc.msg)
		}
		if got := getStatus(t, hs.URL).Actions; !reflect.DeepEqual(got, want) {
			t.Errorf("step %d: %s: actions %v after a refusal, want %v", i, tc.what, got, want)
		}
	}

	clock.Advance(2 * time.Minute) // past the end of 120 minutes at 1 s
	status, out = post(t, hs.URL, "application/json", testToken, `{"control": "rollback"}`)
	if msg, _ := out["error"].(string); status != http.StatusConflict || !strings.Contains(msg, "the drill has ended at 11:00") {
		t.Errorf("a lever after the end: %d %v; want 409 saying the drill has ended", status, out)
	}
	st := getStatus(t, hs.URL)
	if !reflect.DeepEqual(st.Actions, want) || !st.Ended || st.Minute != 120 || !strings.Contains(st.Share, "actions=13%3Arollback") {
		t.Errorf("status after the end: %+v", st)
	}
}

// TestDrillHostCheck: a drill on loopback refuses a Host name that is
// not (DNS rebinding), and GET-only routes refuse POST.
func TestDrillHostCheck(t *testing.T) {
	_, hs, _ := startServer(t, "steady", time.Second)
	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/metrics", nil)
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "DNS rebinding") {
		t.Errorf("Host evil.example: %d %s; want 403", resp.StatusCode, body)
	}
	resp, err = http.Post(hs.URL+"/status", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /status: %d, want 405", resp.StatusCode)
	}
}

// TestDrillEnds: the drill's timer ends it at Minutes × Speed.
func TestDrillEnds(t *testing.T) {
	s, _, clock := startServer(t, "steady", time.Second)
	clock.Advance(119 * time.Second)
	select {
	case <-s.Ended():
		t.Fatal("ended a second early")
	default:
	}
	clock.Advance(time.Second)
	select {
	case <-s.Ended():
	default:
		t.Fatal("not ended at 120 s")
	}
}

// scrape returns the drill's /metrics, parsed.
func scrape(t *testing.T, url string) ([]byte, map[string]*dto.MetricFamily) {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("/metrics: %v\n%s", err, raw)
	}
	return raw, fams
}

// TestDrillMetrics: /metrics has every metric docs/drill.md lists, with
// its type and labels, the build's version changing with the deploy; and
// promtool check metrics finds nothing to say of it.
func TestDrillMetrics(t *testing.T) {
	_, hs, clock := startServer(t, "bad-deploy", time.Second)
	clock.Advance(30 * time.Second) // minute 30: the bad build is out
	raw, fams := scrape(t, hs.URL)
	for i, m := range []struct {
		name   string
		typ    dto.MetricType
		labels string
	}{
		{"http_requests_total", dto.MetricType_COUNTER, "code=200 code=429 code=500 code=503 code=504"},
		{"http_request_duration_seconds", dto.MetricType_HISTOGRAM, ""},
		{"fleet_instances", dto.MetricType_GAUGE, "state=booting state=serving"},
		{"cache_hits_total", dto.MetricType_COUNTER, ""},
		{"cache_misses_total", dto.MetricType_COUNTER, ""},
		{"db_queries_total", dto.MetricType_COUNTER, ""},
		{"db_utilization_ratio", dto.MetricType_GAUGE, ""},
		{"db_connections_active", dto.MetricType_GAUGE, ""},
		{"slo_error_budget_burn_rate", dto.MetricType_GAUGE, "window=1h window=1m window=5m"},
		{"slo_error_budget_remaining_ratio", dto.MetricType_GAUGE, ""},
		{"build_info", dto.MetricType_GAUGE, "version=1.42.0"},
		{"fleet_cost_dollars_per_hour", dto.MetricType_GAUGE, ""},
		{"drill_minute", dto.MetricType_GAUGE, ""},
		{"drill_info", dto.MetricType_GAUGE, "scenario=bad-deploy,speed_seconds=1"},
	} {
		f, ok := fams[m.name]
		if !ok {
			t.Errorf("step %d: no %s in /metrics", i, m.name)
			continue
		}
		var got []string
		for _, s := range f.Metric {
			var ls []string
			for _, l := range s.Label {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			if len(ls) > 0 {
				got = append(got, strings.Join(ls, ","))
			}
		}
		if f.GetType() != m.typ || strings.Join(got, " ") != m.labels {
			t.Errorf("step %d: %s: %v with %q; want %v with %q", i, m.name, f.GetType(), got, m.typ, m.labels)
		}
	}
	if v := fams["drill_minute"].Metric[0].GetGauge().GetValue(); v != 30 {
		t.Errorf("drill_minute %v, want 30", v)
	}

	tool := promtool(t)
	cmd := exec.Command(tool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(raw)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// promtool is the path of Prometheus's promtool, or a skip (a failure
// when AFLOAT_REQUIRE_PROMTOOL is set, as make test sets it).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("AFLOAT_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("promtool is not on PATH and AFLOAT_REQUIRE_PROMTOOL is set: %v", err)
		}
		t.Skip("promtool is not on PATH (Debian's prometheus package brings it; make deps installs it)")
	}
	return p
}

// TestPullLever: the command line's client sends what it is given and
// returns the drill's refusals in its words, matching its sentinels.
func TestPullLever(t *testing.T) {
	_, hs, clock := startServer(t, "bad-deploy", time.Second)
	ctx := t.Context()
	clock.Advance(20 * time.Second)
	p, err := PullLever(ctx, hs.Client(), hs.URL, testToken, "fleet-floor", "20")
	if err != nil || p.Action != sim.Set(21, sim.ControlFleetFloor, 20) || p.Clock != "09:21" || !p.At.Equal(t0.Add(21*time.Second)) {
		t.Fatalf("fleet-floor 20 at minute 20: %+v, %v", p, err)
	}
	for i, tc := range []struct {
		token, name, value string
		is                 error
		msg                string
	}{
		{testToken, "reboot", "", ErrInvalidLever, `control: unknown control "reboot"`},
		{testToken, "fleet-floor", "99", ErrInvalidLever, "value: fleet_floor takes an integer from 0 to 40, got 99"},
		{testToken, "fleet-floor", "lots", ErrInvalidLever, `fleet_floor takes an integer from 0 to 40, got "lots"`},
		{testToken, "heavy-feature", "off", ErrInvalidLever, `heavy_feature takes true or false, got "off"`},
		{testToken, "rollback", "now", ErrInvalidLever, `rollback takes no value (it is a button), got "now"`},
		{"not-the-token-0123", "rollback", "", ErrUnauthorized, "a valid token is required"},
	} {
		_, err := PullLever(ctx, hs.Client(), hs.URL, tc.token, tc.name, tc.value)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("step %d: PullLever(%s %s) = %v; want %v saying %q", i, tc.name, tc.value, err, tc.is, tc.msg)
		}
	}
	clock.Advance(5 * time.Minute)
	if _, err := PullLever(ctx, hs.Client(), hs.URL, testToken, "rollback", ""); !errors.Is(err, ErrEnded) {
		t.Errorf("after the end: %v, want ErrEnded", err)
	}
	if got := getStatus(t, hs.URL).Actions; !reflect.DeepEqual(got, []sim.Action{p.Action}) {
		t.Errorf("actions %v, want only %v", got, p.Action)
	}
}

func TestLeverBody(t *testing.T) {
	for i, tc := range []struct{ name, value, want string }{
		{"rollback", "", `{"control":"rollback"}`},
		{"fleet-floor", "20", `{"control":"fleet_floor","value":20}`},
		{"cache_ttl_s", "1e2", `{"control":"cache_ttl_s","value":1e2}`},
		{"heavy-feature", "false", `{"control":"heavy_feature","value":false}`},
		{"target-utilization", ".5", `{"control":"target_utilization","value":".5"}`},
		{"fleet-floor", "NaN", `{"control":"fleet_floor","value":"NaN"}`},
		{"fleet-floor", `1}`, `{"control":"fleet_floor","value":"1}"}`},
	} {
		if got := string(LeverBody(tc.name, tc.value)); got != tc.want {
			t.Errorf("step %d: LeverBody(%q, %q) = %s, want %s", i, tc.name, tc.value, got, tc.want)
		}
	}
}

// amNotification is an Alertmanager webhook notification of one alert.
func amNotification(status, name, severity string, starts, ends time.Time) string {
	b, _ := json.Marshal(map[string]any{
		"version": "4", "status": status, "receiver": "drill", "groupKey": "{}:{}",
		"alerts": []map[string]any{{
			"status": status, "labels": map[string]string{"alertname": name, "severity": severity, "job": "drill"},
			"annotations": map[string]string{"summary": "…"}, "startsAt": starts, "endsAt": ends,
			"generatorURL": "http://prometheus/graph", "fingerprint": "c0ffee",
		}},
	})
	return string(b)
}

func postAlerts(t *testing.T, url, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/alerts", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestDrillPostmortem: once the drill has ended (not before), the
// postmortem reveals the incident, lists the alerts Alertmanager
// delivered (each once) and the levers, and scores the run as the
// console's debrief of its share link does.
func TestDrillPostmortem(t *testing.T) {
	s, hs, clock := startServer(t, "bad-deploy", time.Second)
	clock.Advance(12500 * time.Millisecond)
	if _, err := s.Lever(sim.ControlRollback, 0); err != nil {
		t.Fatal(err)
	}
	fired := t0.Add(12 * time.Second)
	for range 2 { // Alertmanager repeats itself
		if status := postAlerts(t, hs.URL, amNotification("firing", "ErrorBudgetBurnFast", "page", fired, time.Time{})); status != 200 {
			t.Fatalf("POST /alerts: %d", status)
		}
	}
	resp, err := http.Get(hs.URL + "/postmortem")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("GET /postmortem during the drill: %d, want 409", resp.StatusCode)
	}
	clock.Advance(10 * time.Second)
	postAlerts(t, hs.URL, amNotification("resolved", "ErrorBudgetBurnFast", "page", fired, t0.Add(21*time.Second)))
	clock.Advance(2 * time.Minute)

	resp, err = http.Get(hs.URL + "/postmortem")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	pm := string(raw)
	st := getStatus(t, hs.URL)
	cfg, err := sim.ParseQuery(mustQuery(t, st.Share))
	if err != nil {
		t.Fatal(err)
	}
	frames, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := sim.Lookup(cfg.Scenario)
	points := sim.ScoreFrames(sc, frames).Points
	for _, want := range []string{
		"# Postmortem: Bad deploy (drill, seed 7)",
		"A bad deploy at 09:10: the new build failed 5.0 % of its requests and needed 1.25× the CPU.",
		"| 09:10 | 10 | Deploy of build 1.42.0 — a bad build, failing 5.0 % of its requests (revealed now) |",
		"| 09:12 | 12 | Alert **ErrorBudgetBurnFast** (page) fired; Alertmanager delivered it at 09:12 |",
		"| 09:13 | 13 | Lever: rollback (pulled during 09:12) |",
		"| 09:18 | 18 | Build 1.41.0 serves again (build_info) |",
		"| 09:21 | 21 | Alert **ErrorBudgetBurnFast** (page) resolved; Alertmanager delivered it at 09:22 |",
		fmt.Sprintf("**%.1f points**", points),
		"Par (the expert, who sees what you saw)",
		"## What the coach would have done",
		"http://127.0.0.1:8080/?" + st.Share + "#debrief",
	} {
		if !strings.Contains(pm, want) {
			t.Errorf("the postmortem lacks %q:\n%s", want, pm)
		}
	}
	if n := strings.Count(pm, "fired; Alertmanager"); n != 1 {
		t.Errorf("the firing alert told %d times, want once", n)
	}
}

func mustQuery(t *testing.T, q string) url.Values {
	t.Helper()
	v, err := url.ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestReadStatus: ReadStatus reads a running drill's status as GET
// /status gives it, and RunSoFar is the run the console replays; an
// answer that is not a drill's status — another server's, a scenario
// the model does not know, a minute or a lever out of range, too long —
// is refused as ErrBadStatus naming the field.
func TestReadStatus(t *testing.T) {
	s, hs, clock := startServer(t, "bad-deploy", time.Second)
	ctx := t.Context()
	clock.Advance(20 * time.Second)
	if _, err := s.Lever(sim.ControlRollback, 0); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStatus(ctx, hs.Client(), hs.URL+"/")
	if err != nil || st.Minute != 20 || st.Ended || !reflect.DeepEqual(st.Actions, []sim.Action{{Minute: 21, Control: sim.ControlRollback}}) {
		t.Fatalf("ReadStatus at minute 20 = %+v, %v", st, err)
	}
	if got, want := st.RunSoFar().Query().Encode(), "actions=21%3Arollback&noise=1&scenario=bad-deploy&seed=7"; got != want {
		t.Errorf("RunSoFar's query = %s, want %s", got, want)
	}
	clock.Advance(5 * time.Minute)
	if st, err := ReadStatus(ctx, hs.Client(), hs.URL); err != nil || !st.Ended || st.Minute != st.Minutes {
		t.Errorf("ReadStatus after the end = %+v, %v", st, err)
	}

	good := `{"scenario":"bad-deploy","minute":3,"minutes":120,"ended":false,"actions":[]}`
	for _, tc := range []struct {
		status int
		body   string
		msg    string
	}{
		{http.StatusNotFound, `{"error":"no such page"}`, "answered 404 Not Found"},
		{http.StatusOK, `<html>a console</html>`, "invalid character"},
		{http.StatusOK, strings.Replace(good, "bad-deploy", "meteor", 1), `scenario "meteor": want one of`},
		{http.StatusOK, strings.Replace(good, "120", "60", 1), "minutes 60: want 120"},
		{http.StatusOK, strings.Replace(good, `"minute":3`, `"minute":-1`, 1), "minute -1 (ended false): want 0 to 119"},
		{http.StatusOK, strings.Replace(good, `"minute":3`, `"minute":120`, 1), "minute 120 (ended false)"},
		{http.StatusOK, strings.Replace(good, `[]`, `[{"minute":4,"control":"fleet_floor","value":99}]`, 1), "fleet_floor takes an integer from 0 to 40, got 99"},
		{http.StatusOK, strings.Replace(good, `[]`, `[{"minute":9,"control":"rollback"}]`, 1), "actions[0]: minute 9: want"},
		{http.StatusOK, strings.Replace(good, `[]`, `[{"minute":4,"control":"rollback"},{"minute":2,"control":"rollback"}]`, 1), "actions[1]: minute 2: want 4 to 4"},
		{http.StatusOK, `{"scenario":"` + strings.Repeat("x", maxStatus) + `"}`, "more than 1048576 bytes"},
	} {
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			io.WriteString(w, tc.body) //nolint:errcheck
		}))
		_, err := ReadStatus(ctx, other.Client(), other.URL)
		other.Close()
		if !errors.Is(err, ErrBadStatus) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%d %.80s: %v; want ErrBadStatus saying %q", tc.status, tc.body, err, tc.msg)
		}
	}
	if _, err := ReadStatus(ctx, hs.Client(), "http://127.0.0.1:1"); err == nil || errors.Is(err, ErrBadStatus) {
		t.Errorf("nothing listening: %v; want a connection error", err)
	}
}

// FuzzStatus: whatever a drill's GET /status answers, decoding it and
// checking it never panics, and a status that passes the checks is one
// the console replays: its RunSoFar's share link parses back to it.
func FuzzStatus(f *testing.F) {
	f.Add([]byte(`{"scenario":"bad-deploy","seed":7,"minute":30,"minutes":120,"actions":[{"minute":31,"control":"fleet_floor","value":20}]}`))
	f.Add([]byte(`{"scenario":"mystery","minute":240,"minutes":240,"ended":true,"actions":[{"minute":3,"control":"rollback"}]}`))
	f.Add([]byte(`{"scenario":"surge","minute":0,"minutes":90,"actions":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var st Status
		if json.Unmarshal(body, &st) != nil || st.check() != nil {
			return
		}
		run := st.RunSoFar()
		back, err := sim.ParseQuery(run.Query())
		if err != nil {
			t.Fatalf("status %s: its run's link %s does not parse: %v", body, run.Query().Encode(), err)
		}
		if back.Scenario != run.Scenario || back.Seed != run.Seed || !back.Noise || len(back.Actions) != len(run.Actions) {
			t.Fatalf("status %s: its run %+v parses back as %+v", body, run, back)
		}
	})
}
