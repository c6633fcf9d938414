package web

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/afloat/afloat/assign"
	"github.com/afloat/afloat/assign/assigntest"
	"github.com/afloat/afloat/bulkhead"
)

// poolCounts reads a pool straight from Redis, not through the console.
func poolCounts(t *testing.T, redisURL, pool string) map[string]int64 {
	t.Helper()
	c := assignClient(t, redisURL)
	p, err := assign.New(c, pool)
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Status(assigntest.Context(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, m := range st.Members {
		out[m.Name] = m.Count
	}
	return out
}

func sameCounts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCrossSiteWritesAreRefused: the review wiped a real Redis pool with a
// cross-site POST to /api/assign/reset and started a minute of CPU with
// one to /api/overload/live. Every state-changing route now answers 403 to
// what another site's page can send — a request its browser marks as
// cross-site, one whose Origin is another site, one with no Content-Type
// or a form's — and nothing changes in Redis.
func TestCrossSiteWritesAreRefused(t *testing.T) {
	redis := assigntest.Start(t)
	h := assignHandler(t, redis.URL)
	if code, _ := callAssign(t, h, "POST", "/api/assign/create", `{}`); code != 200 {
		t.Fatalf("a same-origin create: %d", code)
	}
	if code, _ := callAssign(t, h, "POST", "/api/assign/pick", `{"n": 10}`); code != 200 {
		t.Fatalf("a same-origin pick: %d", code)
	}
	before := poolCounts(t, redis.URL, "console-test")

	routes := []struct{ path, body string }{
		{"/api/assign/create", `{"members": 2}`},
		{"/api/assign/reset", `{"members": 2}`},
		{"/api/assign/pick", `{"n": 1000}`},
		{"/api/assign/load", `{"rate": 5000}`},
		{"/api/assign/remove", `{"member": "proxy-01"}`},
		{"/api/assign/restore", `{"member": "proxy-01"}`},
		{"/api/overload/live", `{}`},
		{"/api/overload/compare", `{"profile": "worldcup", "seed": 99}`},
		{"/api/run", `{"scenario": "steady"}`},
	}
	attacks := []struct {
		name    string
		headers map[string]string
	}{
		{"Origin of another site", map[string]string{"Origin": "https://evil.example", "Content-Type": "application/json"}},
		{"Sec-Fetch-Site: cross-site", map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"}},
		{"Sec-Fetch-Site: same-site", map[string]string{"Sec-Fetch-Site": "same-site", "Content-Type": "application/json"}},
		{"no Content-Type", map[string]string{}},
		{"a form", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}},
		{"text/plain", map[string]string{"Content-Type": "text/plain;charset=UTF-8"}},
		{"Origin null", map[string]string{"Origin": "null", "Content-Type": "application/json"}},
	}
	step := 0
	for _, rt := range routes {
		for _, at := range attacks {
			req := localRequest("POST", rt.path, strings.NewReader(rt.body))
			for k, v := range at.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `"error"`) {
				t.Errorf("step %d: %s %s: %d %s, want 403 with a reason", step, at.name, rt.path, rec.Code, rec.Body)
			}
			step++
		}
	}
	if after := poolCounts(t, redis.URL, "console-test"); !sameCounts(before, after) {
		t.Errorf("refused requests changed the pool:\nbefore %v\nafter  %v", before, after)
	}
	if _, st := callAssign(t, h, "GET", "/api/assign", ""); st.Load.Running {
		t.Errorf("a refused request started a load: %+v", st.Load)
	}

	// The console's own page: same-origin, JSON.
	req := localRequest("POST", "/api/assign/pick", strings.NewReader(`{"n": 1}`))
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", "http://127.0.0.1:8080")
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("the console's own page: %d %s", rec.Code, rec.Body)
	}
}

// TestHostGuard: with DNS rebinding, evil.example resolves to 127.0.0.1
// and its scripts read the answers; the console answers only to loopback
// names unless told otherwise.
func TestHostGuard(t *testing.T) {
	h := Handler(DefaultConfig())
	for i, tc := range []struct {
		host, path string
		status     int
	}{
		{"evil.example:8080", "/", 403},
		{"evil.example", "/api/scenarios", 403},
		{"evil.example:8080", "/static/js/app.js", 403},
		{"127.0.0.2:8080", "/api/scenarios", 200},
		{"localhost:8080", "/api/scenarios", 200},
		{"LOCALHOST.", "/api/scenarios", 200},
		{"console.localhost:8080", "/api/scenarios", 200},
		{"[::1]:8080", "/api/scenarios", 200},
		{"127.0.0.1", "/", 200},
		{"10.0.0.1:8080", "/api/scenarios", 403},
		{"", "/api/scenarios", 403},
	} {
		req := httptest.NewRequest("GET", tc.path, nil)
		req.Host = tc.host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("step %d: Host %q GET %s = %d, want %d", i, tc.host, tc.path, rec.Code, tc.status)
		}
		if tc.status == 403 && !strings.Contains(rec.Body.String(), "--allow-remote") {
			t.Errorf("step %d: the refusal does not say how to allow it: %s", i, rec.Body)
		}
	}
	c := DefaultConfig()
	c.AllowRemote = true
	req := httptest.NewRequest("GET", "/api/scenarios", nil)
	req.Host = "console.example.org"
	rec := httptest.NewRecorder()
	Handler(c).ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("with AllowRemote, another host name: %d", rec.Code)
	}
}

// TestServingBeyondLoopbackIsExplicit: an address beyond loopback is
// refused unless AllowRemote is set.
func TestServingBeyondLoopbackIsExplicit(t *testing.T) {
	for i, tc := range []struct {
		addr   string
		remote bool
		ok     bool
	}{
		{"127.0.0.1:8080", false, true},
		{"localhost:0", false, true},
		{"[::1]:8080", false, true},
		{"0.0.0.0:8080", false, false},
		{":8080", false, false},
		{"[::]:8080", false, false},
		{"192.168.1.5:8080", false, false},
		{"0.0.0.0:8080", true, true},
		{"127.0.0.1:65536", false, false},
	} {
		c := DefaultConfig()
		c.Addr, c.AllowRemote = tc.addr, tc.remote
		err := c.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("step %d: Validate(addr %q, allow remote %v) = %v, want ok %v", i, tc.addr, tc.remote, err, tc.ok)
		}
		if err != nil && !tc.ok && !strings.Contains(err.Error(), "loopback") && !strings.Contains(err.Error(), "port") {
			t.Errorf("step %d: %v does not say why", i, err)
		}
	}
}

// TestMediaTypes: a body is JSON exactly; application/jsonfoo passed
// before.
func TestMediaTypes(t *testing.T) {
	h := Handler(DefaultConfig())
	for i, tc := range []struct {
		ct     string
		status int
	}{
		{"application/json", 200},
		{"application/json; charset=utf-8", 200},
		{"Application/JSON; Charset=UTF-8", 200},
		{"application/jsonfoo", 415},
		{"application/json-patch+json", 415},
		{"application/json; charset=latin1", 415},
		{"application/json; foo=bar", 415},
		{"application/json;;", 415},
		{"text/plain", 403},
		{"", 403},
	} {
		req := localRequest("POST", "/api/run", strings.NewReader(`{"scenario": "steady", "to": 1}`))
		if tc.ct != "" {
			req.Header.Set("Content-Type", tc.ct)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("step %d: Content-Type %q = %d %s, want %d", i, tc.ct, rec.Code, rec.Body, tc.status)
		}
		if tc.status != 200 && !strings.Contains(rec.Body.String(), `"field":"Content-Type"`) {
			t.Errorf("step %d: the refusal does not name Content-Type: %s", i, rec.Body)
		}
	}
}

// TestStrictDecoding: what the decoders used to drop or let win silently.
func TestStrictDecoding(t *testing.T) {
	srv := newTestServer(t)
	for i, tc := range []struct {
		method, path, body string
		field, want        string
	}{
		{"GET", "/api/run?scenario=steady&seed=%zz", "", "seed", "malformed percent-encoding"},
		{"GET", "/api/run?scenario=steady&actions=%zz1:rollback", "", "actions", "malformed percent-encoding"},
		{"GET", "/api/run?scenario=steady&bogus%zz=1", "", "bogus%zz", "malformed percent-encoding"},
		{"GET", "/api/run?scenario=steady;seed=1", "", "scenario", "semicolon"},
		{"GET", "/api/run?scenario=steady&seed=%ff", "", "seed", "malformed percent-encoding"},
		{"GET", "/api/run?scenario=steady&se%65d=1&seed=2", "", "seed", "given more than once"},
		{"POST", "/api/run", `{"scenario": "steady", "seed": 1, "seed": 2}`, "seed", `key "seed" given more than once in the body`},
		{"POST", "/api/run", `{"scenario": "steady", "actions": [{"minute": 1, "minute": 2, "control": "rollback"}]}`, "actions[0].minute", `given more than once in actions[0]`},
		{"POST", "/api/debrief", `{"scenario": "steady", "at": 3, "at": 4}`, "at", "given more than once"},
		{"POST", "/api/run", `{"scenario": "steady", "actions": [[[[[[[[[1]]]]]]]]]}`, "", "nested deeper than 8"},
		{"POST", "/api/assign/reset", `{"members": 3, "members": 40}`, "members", "given more than once"},
	} {
		ct := ""
		if tc.method == "POST" {
			ct = "application/json"
		}
		status, _, body := call(t, srv, tc.method, tc.path, ct, []byte(tc.body))
		msg, _ := body["error"].(string)
		field, _ := body["field"].(string)
		if status != 400 || field != tc.field || !strings.Contains(msg, tc.want) {
			t.Errorf("step %d: %s %s %s = %d field %q %q; want 400 field %q mentioning %q", i, tc.method, tc.path, tc.body, status, field, msg, tc.field, tc.want)
		}
	}
}

// TestInFlightIsBounded: the API runs inside a bulkhead; beyond its limit
// and queue, or after the queue's maximum wait, a request gets 503 with
// Retry-After and costs nothing more.
func TestInFlightIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := bulkhead.New(2, bulkhead.WithQueue(1), bulkhead.WithMaxWait(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		var served int
		var mu sync.Mutex
		h := inFlight(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release
			mu.Lock()
			served++
			mu.Unlock()
			writeJSON(w, 200, map[string]bool{"ok": true})
		}))
		codes := make(chan *httptest.ResponseRecorder, 4)
		for range 4 {
			go func() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, localRequest("GET", "/api/run", nil))
				codes <- rec
			}()
		}
		synctest.Wait() // two inside, one queued, one refused at once
		rec := <-codes
		if rec.Code != 503 || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "busy") {
			t.Fatalf("the fourth: %d %q %s, want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
		time.Sleep(time.Second) // the queued one's maximum wait
		synctest.Wait()
		if rec := <-codes; rec.Code != 503 {
			t.Fatalf("the queued one after its maximum wait: %d, want 503", rec.Code)
		}
		close(release)
		for range 2 {
			if rec := <-codes; rec.Code != 200 {
				t.Errorf("one inside: %d", rec.Code)
			}
		}
		if served != 2 {
			t.Errorf("served %d, want 2", served)
		}
		// Assets are not counted.
		rec = httptest.NewRecorder()
		inFlight(b, http.NotFoundHandler()).ServeHTTP(rec, localRequest("GET", "/static/x", nil))
		if rec.Code != 404 {
			t.Errorf("asset: %d", rec.Code)
		}
	})
}

// TestAssignLabLeavesOtherPoolsAlone: the lab changes only a pool it
// created itself unless the operator opts in (--assign-write): a pool that
// was on the Redis before is shown, and every change is refused with 403.
func TestAssignLabLeavesOtherPoolsAlone(t *testing.T) {
	redis := assigntest.Start(t)
	c := assignClient(t, redis.URL)
	theirs, _ := assign.New(c, "production-proxies")
	ctx := assigntest.Context(t, 5*time.Second)
	if _, err := theirs.Add(ctx, 7, "http://10.0.0.1:3128", "http://10.0.0.2:3128"); err != nil {
		t.Fatal(err)
	}
	before := poolCounts(t, redis.URL, "production-proxies")

	cfg := DefaultConfig()
	cfg.RedisURL, cfg.AssignPool = redis.URL, "production-proxies"
	h, lab := newHandler(cfg)
	defer lab.stop()
	code, st := callAssign(t, h, "GET", "/api/assign", "")
	if code != 200 || st.Writable || len(st.Members) != 2 {
		t.Fatalf("state: %d %+v, want the pool shown read-only", code, st.assignState)
	}
	for i, rt := range []struct{ path, body string }{
		{"/api/assign/reset", `{"members": 8}`},
		{"/api/assign/pick", `{"n": 5}`},
		{"/api/assign/load", `{"rate": 100}`},
		{"/api/assign/remove", `{"member": "http://10.0.0.1:3128"}`},
		{"/api/assign/restore", `{"member": "http://10.0.0.1:3128"}`},
	} {
		if code, a := callAssign(t, h, "POST", rt.path, rt.body); code != 403 || !strings.Contains(a.Error, "--assign-write") {
			t.Errorf("step %d: POST %s = %d %q, want 403 naming --assign-write", i, rt.path, code, a.Error)
		}
	}
	if after := poolCounts(t, redis.URL, "production-proxies"); !sameCounts(before, after) {
		t.Errorf("the lab changed a pool it did not create:\nbefore %v\nafter  %v", before, after)
	}

	cfg.AssignWrite = true
	h2, lab2 := newHandler(cfg)
	defer lab2.stop()
	if code, st := callAssign(t, h2, "GET", "/api/assign", ""); code != 200 || !st.Writable {
		t.Fatalf("with AssignWrite: %d %+v", code, st.assignState)
	}
	if code, _ := callAssign(t, h2, "POST", "/api/assign/pick", `{"n": 1}`); code != 200 {
		t.Errorf("with AssignWrite, a pick: %d", code)
	}
}

// TestNoPasswordInOutput: the review saw the tail of a password holding
// "@" on the page. Neither the page's state, nor an error, nor a log line
// shows any part of one.
func TestNoPasswordInOutput(t *testing.T) {
	const secret = "p@SECRET-9f2"
	redis := assigntest.Start(t, "--requirepass", secret)
	var logs bytes.Buffer
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for i, url := range []string{
		"redis://:" + secret + "@" + redis.Addr,          // right
		"redis://:" + secret + "-wrong@" + redis.Addr,    // wrong: AUTH fails
		"redis://:" + secret + "@127.0.0.1:1",            // nothing listens
		"redis://user:" + secret + "@" + redis.Addr + "", // ACL user that does not exist
	} {
		cfg.RedisURL = url
		h, lab := newHandler(cfg)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, localRequest("GET", "/api/assign", nil))
		lab.stop()
		out, _ := io.ReadAll(rec.Body)
		for _, part := range []string{"SECRET", "9f2", secret} {
			if bytes.Contains(out, []byte(part)) || bytes.Contains(logs.Bytes(), []byte(part)) {
				t.Errorf("step %d: %q shows up:\nanswer %d %s\nlogs %s", i, part, rec.Code, out, logs.String())
			}
		}
		if i == 0 && (rec.Code != 200 || !bytes.Contains(out, []byte(`"server":"redis://xxxxx@`+redis.Addr+`"`))) {
			t.Errorf("step %d: %d %s, want the pool with the server's URL redacted", i, rec.Code, out)
		}
	}
}
