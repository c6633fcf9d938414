package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/afloat/afloat/sim"
)

func newTestServer(t testing.TB) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(Handler(DefaultConfig()))
	t.Cleanup(srv.Close)
	return srv
}

// call makes a request and decodes a JSON answer.
func call(t testing.TB, srv *httptest.Server, method, path, contentType string, body []byte) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: invalid JSON %q: %v", method, path, raw, err)
		}
	}
	return res.StatusCode, res.Header, out
}

func TestScenariosEndpoint(t *testing.T) {
	srv := newTestServer(t)
	status, _, body := call(t, srv, "GET", "/api/scenarios", "", nil)
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	if n := len(body["scenarios"].([]any)); n != 5 {
		t.Errorf("%d scenarios, want 5", n)
	}
	if n := len(body["controls"].([]any)); n != 8 {
		t.Errorf("%d controls, want 8", n)
	}
	// Every numeric lever carries its range, a minimum of 0 included: the
	// page checks what is typed against it (a missing 0 once read "enter a
	// value from NaN to 40").
	for _, c := range body["controls"].([]any) {
		c := c.(map[string]any)
		if k := c["kind"]; k != "integer" && k != "number" {
			continue
		}
		spec, _ := sim.LookupControl(sim.Control(c["control"].(string)))
		if c["min"] != spec.Min || c["max"] != spec.Max {
			t.Errorf("%s: range %v to %v, want %v to %v", c["control"], c["min"], c["max"], spec.Min, spec.Max)
		}
	}
	first := body["scenarios"].([]any)[0].(map[string]any)
	if first["name"] != "steady" || first["start"] != "12:00" || first["controls"].(map[string]any)["fleet_floor"] != 10.0 {
		t.Errorf("first scenario %v", first)
	}
}

func TestRunEndpoint(t *testing.T) {
	srv := newTestServer(t)
	cfg := sim.Config{Scenario: "bad-deploy", Seed: 7, Noise: true, Actions: []sim.Action{sim.Press(28, sim.ControlRollback)}}
	want, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want[10:40])

	q := cfg.Query()
	q.Set("from", "10")
	q.Set("to", "40")
	status, _, get := call(t, srv, "GET", "/api/run?"+q.Encode(), "", nil)
	if status != 200 {
		t.Fatalf("GET: %d %v", status, get)
	}
	body, _ := json.Marshal(map[string]any{
		"scenario": "bad-deploy", "seed": 7, "noise": true, "from": 10, "to": 40,
		"actions": []map[string]any{{"minute": 28, "control": "rollback"}},
	})
	status, _, post := call(t, srv, "POST", "/api/run", "application/json", body)
	if status != 200 {
		t.Fatalf("POST: %d %v", status, post)
	}
	for name, got := range map[string]map[string]any{"GET": get, "POST": post} {
		frames, _ := json.Marshal(got["frames"])
		var a, b any
		json.Unmarshal(frames, &a)
		json.Unmarshal(wantJSON, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: frames differ from sim.Run's minutes 10–39", name)
		}
		if got["minutes"] != 120.0 || got["from"] != 10.0 || got["to"] != 40.0 || got["start"] != "09:00" {
			t.Errorf("%s: header %v", name, got)
		}
		if got["share"] != "actions=28%3Arollback&noise=1&scenario=bad-deploy&seed=7" {
			t.Errorf("%s: share %v", name, got["share"])
		}
	}
	// Defaults: the whole run.
	status, _, all := call(t, srv, "GET", "/api/run?scenario=surge", "", nil)
	if status != 200 || len(all["frames"].([]any)) != 240 || all["noise"] != true || all["seed"] != 0.0 {
		t.Errorf("defaults: %d, %d frames, noise %v, seed %v", status, len(all["frames"].([]any)), all["noise"], all["seed"])
	}
}

func TestDebriefAndExplainEndpoints(t *testing.T) {
	srv := newTestServer(t)
	status, _, body := call(t, srv, "GET", "/api/debrief?scenario=bad-deploy&seed=7&actions=28:rollback&at=60", "", nil)
	if status != 200 {
		t.Fatalf("debrief: %d %v", status, body)
	}
	d := body["debrief"].(map[string]any)
	if d["minutes"] != 60.0 || len(d["timeline"].([]any)) != 3 {
		t.Errorf("debrief %v", d)
	}
	// The surge is revealed only once the run is over.
	if _, _, mid := call(t, srv, "GET", "/api/debrief?scenario=surge&seed=3&at=100", "", nil); mid["surge"] != nil {
		t.Error("the surge is revealed before the end")
	}
	if _, _, end := call(t, srv, "GET", "/api/debrief?scenario=surge&seed=3", "", nil); end["surge"] == nil {
		t.Error("the surge is not revealed at the end")
	}
	status, _, body = call(t, srv, "GET", "/api/explain?scenario=steady&noise=0&minute=0", "", nil)
	if status != 200 || body["clock"] != "12:00" {
		t.Fatalf("explain: %d %v", status, body)
	}
	found := false
	for _, f := range body["formulas"].([]any) {
		f := f.(map[string]any)
		if f["id"] == "cache_hit" {
			found = f["values"] == "hit = 1.00 × 3.375/(1 + 3.375) = 0.7714"
		}
	}
	if !found {
		t.Errorf("explain has no cache_hit with the opening minute's values: %v", body["formulas"])
	}
}

// TestValidation: every refusal is a 400 (or 413/415) with a JSON message
// naming the field and the allowed range.
func TestValidation(t *testing.T) {
	srv := newTestServer(t)
	long := "scenario=steady&minutes=10080&actions=" + strings.Repeat("1:warmup,", 10) + "1:warmup"
	for i, tc := range []struct {
		method, path, body string
		status             int
		field              string
		want               string
	}{
		{"GET", "/api/run", "", 400, "scenario", "scenario missing: want one of steady, bad-deploy, surge, cache-flush"},
		{"GET", "/api/run?scenario=calm", "", 400, "scenario", `"calm": want one of`},
		{"GET", "/api/run?scenario=steady&scenario=surge", "", 400, "scenario", "given more than once"},
		{"GET", "/api/run?scenario=steady&seed=-1", "", 400, "seed", "from 0 to 4294967295"},
		{"GET", "/api/run?scenario=steady&seed=4294967296", "", 400, "seed", "from 0 to 4294967295"},
		{"GET", "/api/run?scenario=steady&noise=maybe", "", 400, "noise", "want 1 or 0"},
		{"GET", "/api/run?scenario=steady&minutes=0.5", "", 400, "minutes", "from 1 to 10080"},
		{"GET", "/api/run?scenario=steady&minutes=10081", "", 400, "minutes", "from 1 to 10080"},
		{"GET", "/api/run?scenario=steady&actions=3:reboot", "", 400, "actions[0].control", "unknown control"},
		{"GET", "/api/run?scenario=steady&actions=1:warmup,3:fleet_floor:41", "", 400, "actions[1].value", "an integer from 0 to 40"},
		{"GET", "/api/run?scenario=steady&actions=120:rollback", "", 400, "actions[0].minute", "from 0 to 119"},
		{"GET", "/api/run?scenario=steady&actions=oops", "", 400, "actions[0]", "want minute:control"},
		{"GET", "/api/run?scenario=steady&from=-1", "", 400, "from", "from 0 to 120"},
		{"GET", "/api/run?scenario=steady&from=121", "", 400, "from", "from 0 to 120"},
		{"GET", "/api/run?scenario=steady&from=10&to=5", "", 400, "to", "from 10 to 120"},
		{"GET", "/api/run?scenario=steady&to=x", "", 400, "to", "an integer from 0 to 120"},
		{"GET", "/api/run?scenario=steady&to=1&to=2", "", 400, "to", "given more than once"},
		{"GET", "/api/run?" + long, "", 400, "to", "at most 1440 per request"},
		{"GET", "/api/run?scenario=steady&at=3", "", 400, "at", `unknown parameter "at"`},
		{"GET", "/api/debrief?scenario=steady&at=0", "", 400, "at", "from 1 to 120"},
		{"GET", "/api/debrief?scenario=steady&from=0", "", 400, "from", `unknown parameter "from"`},
		{"GET", "/api/explain?scenario=steady&minute=120", "", 400, "minute", "from 0 to 119"},
		{"GET", "/api/explain?scenario=steady&minute=-1", "", 400, "minute", "from 0 to 119"},
		{"POST", "/api/run", `{"scenario": "steady", "seed": "7"}`, 400, "seed", "from 0 to 4294967295"},
		{"POST", "/api/run", `{"scenario": "steady", "seed": 1.5}`, 400, "seed", "from 0 to 4294967295"},
		{"POST", "/api/run", `{"scenario": "steady", "noise": "yes"}`, 400, "noise", "true or false"},
		{"POST", "/api/run", `{"scenario": 3}`, 400, "scenario", "want a string"},
		{"POST", "/api/run", `{"seed": 3}`, 400, "scenario", "scenario missing"},
		{"POST", "/api/run", `{"scenario": "steady", "minutes": -2}`, 400, "minutes", "from 1 to 10080"},
		{"POST", "/api/run", `{"scenario": "steady", "actions": {"minute": 1}}`, 400, "actions", "an array of actions"},
		{"POST", "/api/run", `{"scenario": "steady", "actions": [{"minute": 1, "control": "rollback"}, {"minute": 2, "control": "autoscaling", "value": 1}]}`, 400, "actions[1].value", "true or false"},
		{"POST", "/api/run", `{"scenario": "steady", "actions": [{"minute": 500, "control": "rollback"}]}`, 400, "actions[0].minute", "from 0 to 119"},
		{"POST", "/api/run", `{"scenario": "steady", "to": 200}`, 400, "to", "from 0 to 120"},
		{"POST", "/api/run", `{"scenario": "steady", "colour": "red"}`, 400, "colour", `unknown field "colour"`},
		{"POST", "/api/run", `{"scenario": "steady"`, 400, "", "malformed JSON"},
		{"POST", "/api/run", `{"scenario": "steady"} {"x": 1}`, 400, "", "data after the value"},
		{"POST", "/api/run", `[1]`, 400, "", "malformed JSON"},
		{"POST", "/api/run", `null`, 400, "", "malformed JSON"},
		{"POST", "/api/run", `{"scenario": "steady", "actions": [` + strings.Repeat(`{"minute": 1, "control": "rollback"},`, 40000) + `{}]}`, 413, "", "body over 1048576 bytes"},
		{"GET", "/api/nothing", "", 404, "", "no API endpoint GET /api/nothing"},
	} {
		ct := ""
		if tc.method == "POST" {
			ct = "application/json"
		}
		status, _, body := call(t, srv, tc.method, tc.path, ct, []byte(tc.body))
		msg, _ := body["error"].(string)
		field, _ := body["field"].(string)
		if status != tc.status || field != tc.field || !strings.Contains(msg, tc.want) {
			t.Errorf("step %d: %s %.60s %.60s = %d field %q %q; want %d field %q mentioning %q",
				i, tc.method, tc.path, tc.body, status, field, msg, tc.status, tc.field, tc.want)
		}
	}
	status, _, body := call(t, srv, "POST", "/api/run", "application/xml", []byte(`{"scenario": "steady"}`))
	if status != http.StatusUnsupportedMediaType || body["field"] != "Content-Type" {
		t.Errorf("application/xml body: %d %v, want 415", status, body)
	}
	status, _, _ = call(t, srv, "DELETE", "/api/run?scenario=steady", "", nil)
	if status != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %d, want 405", status)
	}
}

func TestSecurityHeadersAndAssets(t *testing.T) {
	srv := newTestServer(t)
	for _, path := range []string{"/", "/api/scenarios", "/static/js/app.js", "/static/i18n/cy.json", "/static/vendor/uplot/uPlot.iife.min.js"} {
		res, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("%s: %d", path, res.StatusCode)
		}
		h := res.Header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", path, h)
		}
	}
	for _, path := range []string{"/static/", "/static/js/", "/static/nothing.js", "/nothing", "/static/../go.mod"} {
		res, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 404 {
			t.Errorf("%s: %d, want 404", path, res.StatusCode)
		}
	}
}

func TestPanicsBecome500(t *testing.T) {
	h := recoverPanics(slog.New(slog.DiscardHandler), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, localRequest("GET", "/api/run", nil))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), "internal error") {
		t.Errorf("panic gave %d %q", rec.Code, rec.Body.String())
	}
}

// TestGracefulShutdown: cancelling the context lets a request in flight
// finish, then Serve returns and the port is closed.
//
// The request goes over a raw connection, and the test cancels only once
// the handler waits for the rest of the body: net/http drops a request
// whose headers it finishes reading after the shutdown has begun (and an
// http.Client holds a streamed body's first bytes in its buffer), so
// anything earlier would test a request not yet in flight.
func TestGracefulShutdown(t *testing.T) {
	body := `{"scenario": "steady", "to": 1}`
	head, tail := body[:13], body[13:]
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := inner.Addr().String()
	request := fmt.Sprintf("POST /api/run HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		addr, len(body), head)
	ln := &waitingListener{Listener: inner, after: len(request), waiting: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, DefaultConfig()) }()

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ln.waiting:
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not read the request")
	}
	cancel()
	if _, err := io.WriteString(conn, tail); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("in-flight request: %v, want 200", err)
	}
	var frames struct{ Frames []json.RawMessage }
	err = json.NewDecoder(res.Body).Decode(&frames)
	res.Body.Close()
	if res.StatusCode != 200 || err != nil || len(frames.Frames) != 1 {
		t.Errorf("in-flight request: %d, %d frames, %v; want 200 and its one frame", res.StatusCode, len(frames.Frames), err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return after the shutdown")
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("the port still accepts connections after the shutdown")
	}
}

// waitingListener closes waiting when the server, having read after bytes
// from a connection, asks it for more: the handler is reading the body.
type waitingListener struct {
	net.Listener
	after   int
	once    sync.Once
	waiting chan struct{}
}

func (l *waitingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &waitingConn{Conn: c, l: l}, nil
}

type waitingConn struct {
	net.Conn
	l    *waitingListener
	read int // bytes read: only the connection's goroutine reads
}

func (c *waitingConn) Read(p []byte) (int, error) {
	if c.read >= c.l.after {
		c.l.once.Do(func() { close(c.l.waiting) })
	}
	n, err := c.Conn.Read(p)
	c.read += n
	return n, err
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for i, mutate := range []func(*Config){
		func(c *Config) { c.Addr = "8080" },
		func(c *Config) { c.ReadTimeout = 0 },
		func(c *Config) { c.MaxBodyBytes = 10 },
	} {
		c := DefaultConfig()
		mutate(&c)
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("step %d: %v, want ErrConfig", i, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := DefaultConfig()
	c.Addr = "bad"
	if err := Run(ctx, c); !errors.Is(err, ErrConfig) {
		t.Errorf("Run with a bad address: %v", err)
	}
}

// FuzzRunQuery: no query string makes the API panic or answer 5xx, and
// every answer is JSON.
func FuzzRunQuery(f *testing.F) {
	for _, s := range []string{
		"scenario=bad-deploy&seed=7&noise=1&actions=16:heavy_feature:false,28:rollback&from=3&to=9",
		"scenario=surge&to=1",
		"scenario=steady&minutes=10080&from=10000&to=10080",
		"scenario=steady&actions=1:fleet_floor:1e400",
		"scenario=cache-flush&at=5",
		"%ff=1",
		"scenario=steady&seed=%zz",
		"scenario=steady;seed=1",
		"scenario=steady&&seed=1&",
		"scenario=steady&minutes=0&to=1e-400",
		"scenario=steady&minute=%2B1&at=0x10",
	} {
		f.Add("run", s)
		f.Add("debrief", s)
		f.Add("explain", s)
	}
	h := Handler(DefaultConfig())
	f.Fuzz(func(t *testing.T, endpoint, raw string) {
		if endpoint != "run" && endpoint != "debrief" && endpoint != "explain" && endpoint != "bot" {
			return
		}
		// The raw query as a client sends it, malformed escapes and all;
		// long runs are covered by the seeds, so keep each input fast.
		if q, err := parseQuery(raw); err == nil {
			if m := q.Get("minutes"); len(m) > 3 {
				return
			}
		}
		req := localRequest("GET", "/api/"+endpoint, nil)
		req.URL.RawQuery = raw
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkAnswer(t, rec)
	})
}

// FuzzRunBody does the same for POST bodies.
func FuzzRunBody(f *testing.F) {
	for _, s := range []string{
		`{"scenario": "bad-deploy", "seed": 7, "actions": [{"minute": 28, "control": "rollback"}], "from": 0, "to": 30}`,
		`{"scenario": "steady", "noise": false, "minutes": 10, "actions": []}`,
		`{"scenario": "surge", "seed": 4294967295, "at": 240}`,
		`{"scenario": "steady", "minute": 3}`,
		`{"scenario": "steady", "seed": 1e3}`,
		`{"actions": [null]}`,
		`{"scenario": "bad-deploy", "seed": 7, "actions": [{"minute": 28, "control": "rollback"}], "coach": true}`,
		`{"scenario": "surge", "seed": 3, "hints": true, "to": 40}`,
		`{"scenario": "cache-flush", "seed": 2, "bot": "runbook"}`,
		`{"scenario": "steady", "bot": "expert", "coach": "1"}`,
		`{"scenario": "steady", "noise": null, "actions": [{"minute": null, "control": "rollback"}]}`,
		`{"scenario": "steady", "seed": 1e-400, "to": 1.0000000000000001}`,
		`{"scenario": "steady", "actions": [{"minute": 2, "control": "fleet_floor", "value": 1e-400, "value": 3}]}`,
	} {
		f.Add("run", []byte(s))
		f.Add("debrief", []byte(s))
		f.Add("explain", []byte(s))
		f.Add("bot", []byte(s))
	}
	h := Handler(DefaultConfig())
	f.Fuzz(func(t *testing.T, endpoint string, body []byte) {
		if endpoint != "run" && endpoint != "debrief" && endpoint != "explain" && endpoint != "bot" {
			return
		}
		if bytes.Contains(body, []byte(`"minutes"`)) {
			return // long runs are covered above; keep each input fast
		}
		req := localRequest("POST", "/api/"+endpoint, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkAnswer(t, rec)
	})
}

func checkAnswer(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	var v map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("status %d with a body that is not JSON: %q", rec.Code, rec.Body.String())
	}
	if rec.Code != 200 && v["error"] == nil {
		t.Fatalf("status %d without an error message: %v", rec.Code, v)
	}
}

// localRequest is httptest.NewRequest addressed to the console on
// loopback (httptest's own Host, example.com, is refused as a rebound name).
func localRequest(method, target string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, target, body)
	r.Host = "127.0.0.1:8080"
	return r
}

// TestAssetsRevalidate: every asset carries an entity tag of its content,
// and a browser that revalidates with it gets 304 and no body — it keeps
// its cached, compiled copy instead of fetching and compiling every script
// again on each page load.
func TestAssetsRevalidate(t *testing.T) {
	h, _ := newHandler(DefaultConfig())
	for i, path := range []string{"/", "/static/js/app.js", "/static/style.css", "/static/vendor/uplot/uPlot.iife.min.js"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, localRequest("GET", path, nil))
		tag := rec.Header().Get("ETag")
		if rec.Code != 200 || len(tag) < 10 || rec.Header().Get("Cache-Control") != "no-cache" {
			t.Fatalf("step %d: GET %s: %d, ETag %q, Cache-Control %q; want 200 with a tag, revalidated", i, path, rec.Code, tag, rec.Header().Get("Cache-Control"))
		}
		req := localRequest("GET", path, nil)
		req.Header.Set("If-None-Match", tag)
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
			t.Errorf("step %d: GET %s with If-None-Match %s: %d with %d bytes, want 304 and none", i, path, tag, rec.Code, rec.Body.Len())
		}
		req.Header.Set("If-None-Match", `"stale"`)
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Errorf("step %d: GET %s with a stale tag: %d, want 200", i, path, rec.Code)
		}
	}
}
