package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/assign/assigntest"
)

// assignHandler is the console on a redis-server of the test's own ("" for
// the in-process demo server).
func assignHandler(t *testing.T, redisURL string) http.Handler {
	t.Helper()
	c := DefaultConfig()
	c.RedisURL = redisURL
	c.AssignPool = "console-test"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	h, lab := newHandler(c)
	t.Cleanup(lab.stop)
	return h
}

type assignAnswer struct {
	Error  string      `json:"error"`
	Field  string      `json:"field"`
	Picked []string    `json:"picked"`
	State  assignState `json:"state"`
	assignState
}

func callAssign(t *testing.T, h http.Handler, method, path, body string) (int, assignAnswer) {
	t.Helper()
	req := localRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var a assignAnswer
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
		t.Fatalf("%s %s: %d %q: %v", method, path, rec.Code, rec.Body.String(), err)
	}
	return rec.Code, a
}

func TestAssignAPI(t *testing.T) {
	srv := assigntest.Start(t)
	h := assignHandler(t, srv.URL)

	code, st := callAssign(t, h, "GET", "/api/assign", "")
	if code != 200 || st.Demo || st.Server != srv.URL || len(st.Members) != 8 || st.Total != 0 {
		t.Fatalf("first state: %d %+v", code, st.assignState)
	}
	code, a := callAssign(t, h, "POST", "/api/assign/pick", `{"n": 10}`)
	if code != 200 || len(a.Picked) != 10 || a.Picked[0] != "proxy-01" || a.Picked[8] != "proxy-01" || a.State.Total != 10 || a.State.Spread != 1 {
		t.Fatalf("pick 10: %d %+v", code, a)
	}
	code, a = callAssign(t, h, "POST", "/api/assign/remove", `{"member": "proxy-03"}`)
	if code != 200 || a.Members[len(a.Members)-1].Name != "proxy-03" || a.Members[len(a.Members)-1].Active {
		t.Fatalf("remove: %d %+v", code, a.assignState)
	}
	callAssign(t, h, "POST", "/api/assign/pick", `{"n": 14}`) // the 7 others: 3 each
	code, a = callAssign(t, h, "POST", "/api/assign/restore", `{"member": "proxy-03", "policy": "keep-history"}`)
	if code != 200 || a.Members[0].Name != "proxy-03" || a.Members[0].Count != 1 {
		t.Fatalf("restore keep-history: %d %+v", code, a.assignState)
	}
	code, a = callAssign(t, h, "POST", "/api/assign/reset", `{"members": 3}`)
	if code != 200 || len(a.Members) != 3 || a.Total != 0 {
		t.Fatalf("reset: %d %+v", code, a.assignState)
	}

	// A steady load from the server: it picks until stopped. (The test
	// waits for picks to be counted; it measures no time.)
	code, a = callAssign(t, h, "POST", "/api/assign/load", `{"rate": 2000}`)
	if code != 200 || !a.Load.Running || a.Load.Rate != 2000 {
		t.Fatalf("load: %d %+v", code, a.assignState)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, st := callAssign(t, h, "GET", "/api/assign", "")
		if st.Total >= 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the load made %d picks in 30 s", st.Total)
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, a = callAssign(t, h, "POST", "/api/assign/load", `{"rate": 0}`)
	if code != 200 || a.Load.Running {
		t.Fatalf("load stop: %d %+v", code, a.assignState)
	}
	if _, a = callAssign(t, h, "GET", "/api/assign", ""); a.Spread > 1 {
		t.Fatalf("after the load max−min is %d", a.Spread)
	}

	// Every member removed: a pick is refused and nothing is counted.
	for _, m := range []string{"proxy-01", "proxy-02", "proxy-03"} {
		callAssign(t, h, "POST", "/api/assign/remove", `{"member": "`+m+`"}`)
	}
	if code, a = callAssign(t, h, "POST", "/api/assign/pick", `{}`); code != 409 || !strings.Contains(a.Error, "assign: pool is empty") {
		t.Fatalf("pick on an empty pool: %d %+v", code, a)
	}
}

// Bad requests: each gets 4xx with the field at fault and the allowed
// range, and changes nothing.
func TestAssignAPIRefuses(t *testing.T) {
	srv := assigntest.Start(t)
	h := assignHandler(t, srv.URL)
	for i, tc := range []struct {
		method, path, body string
		code               int
		field, msg         string
	}{
		{"POST", "/api/assign/pick", `{"n": 0}`, 400, "n", "n 0: want an integer from 1 to 1000"},
		{"POST", "/api/assign/pick", `{"n": 1001}`, 400, "n", "want an integer from 1 to 1000"},
		{"POST", "/api/assign/pick", `{"n": 1.5}`, 400, "n", "want an integer from 1 to 1000"},
		{"POST", "/api/assign/pick", `{"count": 1}`, 400, "count", `unknown field "count": this endpoint takes n`},
		{"POST", "/api/assign/pick", `{"n": 1} x`, 400, "", "data after the value"},
		{"POST", "/api/assign/pick", `[1]`, 400, "", "malformed JSON"},
		{"POST", "/api/assign/remove", `{}`, 400, "member", "want the name of a member"},
		{"POST", "/api/assign/remove", `{"member": "a\u0000b"}`, 400, "member", "control characters"},
		{"POST", "/api/assign/remove", `{"member": "nobody"}`, 409, "", `"nobody" is not an active member`},
		{"POST", "/api/assign/remove", `{"member": "proxy-01", "policy": "zero"}`, 400, "policy", "unknown field"},
		{"POST", "/api/assign/restore", `{"member": "proxy-01"}`, 409, "", `"proxy-01" is not a removed member`},
		{"POST", "/api/assign/restore", `{"member": "proxy-01", "policy": "newest"}`, 400, "policy", "want current-minimum, keep-history, zero"},
		{"POST", "/api/assign/restore", `{"member": "proxy-01", "policy": 1}`, 400, "policy", "want current-minimum, keep-history or zero"},
		{"POST", "/api/assign/reset", `{"members": 1}`, 400, "members", "members 1: want an integer from 2 to 50"},
		{"POST", "/api/assign/load", `{}`, 400, "rate", "rate missing"},
		{"POST", "/api/assign/load", `{"rate": -1}`, 400, "rate", "want an integer from 0 to 5000"},
		{"POST", "/api/assign/load", `{"rate": 5001}`, 400, "rate", "want an integer from 0 to 5000"},
		{"GET", "/api/assign?pool=x", ``, 400, "", "takes no parameters"},
		{"GET", "/api/assign/pick", ``, 405, "", "want POST"},
		{"DELETE", "/api/assign", ``, 405, "", "want GET"},
	} {
		code, a := callAssign(t, h, tc.method, tc.path, tc.body)
		if code != tc.code || a.Field != tc.field || !strings.Contains(a.Error, tc.msg) {
			t.Errorf("step %d: %s %s %s = %d field %q %q; want %d field %q %q", i, tc.method, tc.path, tc.body, code, a.Field, a.Error, tc.code, tc.field, tc.msg)
		}
	}
	req := localRequest("POST", "/api/assign/pick", strings.NewReader(`{"n": 1}`))
	req.Header.Set("Content-Type", "application/xml")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnsupportedMediaType {
		t.Errorf("application/xml body: %d, want 415", rec.Code)
	}
	if _, st := callAssign(t, h, "GET", "/api/assign", ""); st.Total != 0 || len(st.Members) != 8 {
		t.Errorf("refused requests changed the pool: %+v", st)
	}
	bad := DefaultConfig()
	bad.RedisURL = "http://127.0.0.1:1"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "redis URL") {
		t.Errorf("config with an http URL for Redis: %v", err)
	}
}

// With no Redis URL the page runs on the in-process server and says it is
// a demo. (The assignment's behaviour is tested against redis-server; this
// checks the label and that the console works on a bare machine.)
func TestAssignDemoIsLabelled(t *testing.T) {
	h := assignHandler(t, "")
	code, st := callAssign(t, h, "GET", "/api/assign", "")
	if code != 200 || !st.Demo || !strings.HasPrefix(st.Server, "miniredis ") || len(st.Members) != 8 {
		t.Fatalf("demo state: %d %+v", code, st.assignState)
	}
	if code, a := callAssign(t, h, "POST", "/api/assign/pick", `{"n": 3}`); code != 200 || strings.Join(a.Picked, ",") != "proxy-01,proxy-02,proxy-03" {
		t.Fatalf("demo pick: %d %+v", code, a)
	}
}

// FuzzAssignBody: the page's decoders answer any body with a value in
// range or a 4xx naming a field, never a panic.
func FuzzAssignBody(f *testing.F) {
	for _, s := range []string{`{"n": 5}`, `{"member": "proxy-01", "policy": "zero"}`, `{"members": 8}`, `{"rate": 500}`, `{"n": 1e400}`, `{"member": null}`, `{}`, `[]`, `{"rate": "1"}`,
		`{"rate": 1e-400}`, `{"n": 1.0000000000000001}`, `{"policy": null, "member": "a"}`, `{"members": 8, "members": 9}`} {
		for e := range 5 {
			f.Add(uint8(e), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, endpoint uint8, body []byte) {
		var aerr *apiError
		switch endpoint % 5 {
		case 0:
			var n int
			n, aerr = decodePick(body)
			if aerr == nil && (n < 1 || n > assignMaxPick) {
				t.Fatalf("%q: n %d", body, n)
			}
		case 1, 2:
			var m string
			m, _, aerr = decodeMember(body, endpoint%5 == 2)
			if aerr == nil && m == "" {
				t.Fatalf("%q: empty member accepted", body)
			}
		case 3:
			var n int
			n, aerr = decodeReset(body)
			if aerr == nil && (n < assignMinMembers || n > assignMaxMembers) {
				t.Fatalf("%q: members %d", body, n)
			}
		case 4:
			var r int
			r, aerr = decodeLoad(body)
			if aerr == nil && (r < 0 || r > assignMaxRate) {
				t.Fatalf("%q: rate %d", body, r)
			}
		}
		if aerr != nil && (aerr.status < 400 || aerr.status > 499 || aerr.msg == "") {
			t.Fatalf("%q: %+v", body, aerr)
		}
	})
}
