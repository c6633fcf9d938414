package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/afloat/afloat/assign"
	"github.com/afloat/afloat/assign/assigntest"
)

// assignClient is a go-redis client of the Redis at redisURL, given to
// package assign as a user gives theirs (retries off), and closed when the
// test ends.
func assignClient(t *testing.T, redisURL string) *assign.Client {
	t.Helper()
	opt, err := goredis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	opt.MaxRetries = -1
	rdb := goredis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	c, err := assign.FromGoRedis(rdb)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

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
	Error   string       `json:"error"`
	Field   string       `json:"field"`
	Picked  []string     `json:"picked"`
	Created bool         `json:"created"`
	Lease   assign.Lease `json:"lease"`
	WasOpen bool         `json:"was_open"`
	State   assignState  `json:"state"`
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
	if code != 200 || st.Demo || st.Server != srv.URL || len(st.Members) != 0 || st.Exists || st.Writable {
		t.Fatalf("first state: %d %+v", code, st.assignState)
	}
	code, a := callAssign(t, h, "POST", "/api/assign/create", `{}`)
	if code != 200 || !a.Created || !a.State.Exists || !a.State.Owned || !a.State.Writable || len(a.State.Members) != 8 || a.State.Total != 0 {
		t.Fatalf("create: %d %+v", code, a)
	}
	if code, a := callAssign(t, h, "POST", "/api/assign/create", `{}`); code != 200 || a.Created || len(a.State.Members) != 8 {
		t.Fatalf("create again: %d %+v", code, a)
	}
	code, a = callAssign(t, h, "POST", "/api/assign/pick", `{"n": 10}`)
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
	if code, a := callAssign(t, h, "POST", "/api/assign/pick", `{"n": 1}`); code != 403 || !strings.Contains(a.Error, "POST /api/assign/create makes it") {
		t.Errorf("a pick before the pool is created: %d %+v", code, a)
	}
	callAssign(t, h, "POST", "/api/assign/create", `{}`)
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
		{"GET", "/api/assign/create", ``, 405, "", "want POST"},
		{"POST", "/api/assign/create", `{"members": 51}`, 400, "members", "want an integer from 2 to 50"},
		{"DELETE", "/api/assign", ``, 405, "", "want GET"},
		{"POST", "/api/assign/cooldown", `{"member": "proxy-01"}`, 400, "seconds", "seconds missing: want the cooldown in seconds, from 1 to 3600"},
		{"POST", "/api/assign/cooldown", `{"member": "proxy-01", "seconds": 0}`, 400, "seconds", "seconds 0: want an integer from 1 to 3600"},
		{"POST", "/api/assign/cooldown", `{"member": "proxy-01", "seconds": 3601}`, 400, "seconds", "want an integer from 1 to 3600"},
		{"POST", "/api/assign/cooldown", `{"seconds": 5}`, 400, "member", "want the name of a member"},
		{"POST", "/api/assign/cooldown", `{"member": "nobody", "seconds": 5}`, 409, "", `"nobody"`},
		{"POST", "/api/assign/settings", `{}`, 400, "last_resort", "want fail or earliest"},
		{"POST", "/api/assign/settings", `{"last_resort": "random"}`, 400, "last_resort", "want fail, earliest"},
		{"POST", "/api/assign/settings", `{"evict_after": 3}`, 400, "evict_after", "unknown field"},
		{"POST", "/api/assign/llm", `{}`, 400, "on", "want true (start the LLM demo) or false"},
		{"POST", "/api/assign/llm", `{"on": "yes"}`, 400, "on", "want true"},
		{"GET", "/api/assign/cooldown", ``, 405, "", "want POST"},
		{"POST", "/api/assign/acquire", `{}`, 400, "seconds", "seconds missing: want the lease's time in seconds, from 1 to 3600"},
		{"POST", "/api/assign/acquire", `{"seconds": 0}`, 400, "seconds", "want an integer from 1 to 3600"},
		{"POST", "/api/assign/release", `{"member": "proxy-01"}`, 400, "id", "want the lease id acquire answered"},
		{"POST", "/api/assign/release", `{"id": "x1", "member": "proxy-01"}`, 400, "id", "a string of digits"},
		{"POST", "/api/assign/release", `{"id": "1"}`, 400, "member", "want the lease's member"},
		{"POST", "/api/assign/concurrency", `{}`, 400, "cap", "cap missing: want leases in flight per member, from 0 (no cap) to 100"},
		{"POST", "/api/assign/concurrency", `{"cap": 101}`, 400, "cap", "want an integer from 0 to 100"},
		{"GET", "/api/assign/acquire", ``, 405, "", "want POST"},
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

// The LLM demo through the API: four keys with 20 requests a minute in
// bursts of 5, key-3 answering every third request with 429 and a
// Retry-After of 30 s. A hundred picks spread over the keys until every one
// is out (key-3 by its 429, the others by their limits); the next pick is
// refused with 429 and a Retry-After; the last resort "earliest" picks
// anyway; a cooldown by hand shows on its member.
func TestAssignLLMDemoAPI(t *testing.T) {
	srv := assigntest.Start(t)
	h := assignHandler(t, srv.URL)
	callAssign(t, h, "POST", "/api/assign/create", `{}`)
	code, a := callAssign(t, h, "POST", "/api/assign/llm", `{"on": true}`)
	if code != 200 || len(a.Members) != 4 || a.LLM == nil || a.LLM.FailingKey != "key-3" || a.LastResort != assign.LastResortFail {
		t.Fatalf("llm on: %d %+v", code, a.assignState)
	}
	for _, m := range a.Members {
		if m.Limit == nil || *m.Limit != (assign.Limit{Rate: 20, Per: time.Minute, Burst: 5}) {
			t.Fatalf("llm on: %s has limit %+v", m.Name, m.Limit)
		}
	}
	var picks struct {
		Picked      []string    `json:"picked"`
		Answered429 []string    `json:"answered_429"`
		State       assignState `json:"state"`
	}
	rec := httptest.NewRecorder()
	req := localRequest("POST", "/api/assign/pick", strings.NewReader(`{"n": 100}`))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	if err := json.Unmarshal(rec.Body.Bytes(), &picks); err != nil || rec.Code != 200 {
		t.Fatalf("pick 100: %d %s %v", rec.Code, rec.Body, err)
	}
	per := map[string]int{}
	for _, m := range picks.Picked {
		per[m]++
	}
	// key-3 serves 3 (the third answers 429), the others their burst of 5;
	// a token may come back while the picks run (one per 3 s).
	if per["key-3"] != 3 || per["key-1"] < 5 || per["key-1"] > 6 || per["key-2"] < 5 || per["key-4"] < 5 || len(picks.Picked) > 20 ||
		strings.Join(picks.Answered429, ",") != "key-3" {
		t.Fatalf("pick 100 in the LLM demo: %v (%d), 429 from %v", per, len(picks.Picked), picks.Answered429)
	}
	for _, m := range picks.State.Members {
		if m.CoolingUntil.IsZero() {
			t.Errorf("%s is not cooling after the picks: %+v", m.Name, m)
		}
		if m.Name == "key-3" && (m.Streak != 1 || m.CoolingUntil.Sub(picks.State.Now) < 29*time.Second) {
			t.Errorf("key-3 after its 429: %+v, now %v", m, picks.State.Now)
		}
	}
	rec = httptest.NewRecorder()
	req = localRequest("POST", "/api/assign/pick", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	if ra, _ := strconv.Atoi(rec.Header().Get("Retry-After")); rec.Code != 429 || ra < 1 || ra > 30 || !strings.Contains(rec.Body.String(), `"cooling_until"`) {
		t.Fatalf("a pick with every key out: %d Retry-After %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if code, a := callAssign(t, h, "POST", "/api/assign/settings", `{"last_resort": "earliest"}`); code != 200 || a.LastResort != assign.LastResortEarliest {
		t.Fatalf("settings: %d %+v", code, a)
	}
	if code, a := callAssign(t, h, "POST", "/api/assign/pick", `{}`); code != 200 || len(a.Picked) != 1 || a.Picked[0] == "key-3" {
		t.Fatalf("a pick with every key out, last resort earliest: %d %+v", code, a)
	}
	// The server's load goes through the simulated upstream too: key-3's
	// 429 shows, and with every key out the load's picks are refused
	// without counting. (The test waits for the 429; it measures no time.)
	if code, a := callAssign(t, h, "POST", "/api/assign/llm", `{"on": true}`); code != 200 || a.Total != 0 || a.LLM.Answered429 != 0 {
		t.Fatalf("llm on again: %d %+v", code, a.assignState)
	}
	callAssign(t, h, "POST", "/api/assign/load", `{"rate": 200}`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, st := callAssign(t, h, "GET", "/api/assign", "")
		if st.LLM.Answered429 == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the load made %d picks in 30 s and key-3 answered no 429", st.Total)
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, a = callAssign(t, h, "POST", "/api/assign/llm", `{"on": false}`)
	if code != 200 || len(a.Members) != 8 || a.LLM != nil || a.Load.Running {
		t.Fatalf("llm off: %d %+v", code, a.assignState)
	}
	code, a = callAssign(t, h, "POST", "/api/assign/cooldown", `{"member": "proxy-02", "seconds": 60}`)
	if code != 200 || a.State.Members[len(a.State.Members)-1].Name != "proxy-02" ||
		a.State.Members[len(a.State.Members)-1].CoolingUntil.Sub(a.State.Now) < 59*time.Second {
		t.Fatalf("cooldown by hand: %d %+v", code, a.State)
	}
}

// Leases through the API: with every member capped at one lease in
// flight, eight acquires lease the eight members in name order, each then
// full; the ninth is refused with 429 and a Retry-After; a release gives
// its member's room back; the state lists the leases open.
func TestAssignLeasesAPI(t *testing.T) {
	srv := assigntest.Start(t)
	h := assignHandler(t, srv.URL)
	callAssign(t, h, "POST", "/api/assign/create", `{}`)
	if code, a := callAssign(t, h, "POST", "/api/assign/concurrency", `{"cap": 1}`); code != 200 || a.Members[0].Concurrency != 1 {
		t.Fatalf("cap 1: %d %+v", code, a)
	}
	var leases []assign.Lease
	for i := range 8 {
		code, a := callAssign(t, h, "POST", "/api/assign/acquire", `{"seconds": 60}`)
		if want := fmt.Sprintf("proxy-%02d", i+1); code != 200 || a.Lease.Member != want || a.State.OpenLeases != i+1 {
			t.Fatalf("acquire %d: %d %+v, want %s", i, code, a, want)
		}
		leases = append(leases, a.Lease)
	}
	if code, a := callAssign(t, h, "POST", "/api/assign/acquire", `{"seconds": 60}`); code != 429 || !strings.Contains(a.Error, "cooling") {
		t.Fatalf("acquire with every member full: %d %+v", code, a)
	}
	_, st := callAssign(t, h, "GET", "/api/assign", "")
	if len(st.Leases) != 8 || st.Leases[0] != leases[0] || st.Members[0].InFlight != 1 || st.Members[0].Concurrency != 1 {
		t.Fatalf("state with eight leases: %+v", st.assignState)
	}
	body := fmt.Sprintf(`{"id": %q, "member": %q}`, leases[2].ID, leases[2].Member)
	if code, a := callAssign(t, h, "POST", "/api/assign/release", body); code != 200 || !a.WasOpen || a.State.OpenLeases != 7 {
		t.Fatalf("release: %d %+v", code, a)
	}
	if code, a := callAssign(t, h, "POST", "/api/assign/release", body); code != 200 || a.WasOpen {
		t.Fatalf("release again: %d %+v", code, a)
	}
	if code, a := callAssign(t, h, "POST", "/api/assign/acquire", `{"seconds": 60}`); code != 200 || a.Lease.Member != "proxy-03" {
		t.Fatalf("acquire after the release: %d %+v", code, a)
	}
	if code, a := callAssign(t, h, "POST", "/api/assign/concurrency", `{"cap": 0}`); code != 200 || a.Members[0].Concurrency != 0 || !a.Members[0].CoolingUntil.IsZero() {
		t.Fatalf("cap cleared: %d %+v", code, a)
	}
}

// With no Redis URL the page runs on the in-process server and says it is
// a demo. (The assignment's behaviour is tested against redis-server; this
// checks the label and that the console works on a bare machine.)
func TestAssignDemoIsLabelled(t *testing.T) {
	h := assignHandler(t, "")
	code, st := callAssign(t, h, "GET", "/api/assign", "")
	if code != 200 || !st.Demo || !strings.HasPrefix(st.Server, "miniredis ") || st.Exists {
		t.Fatalf("demo state: %d %+v", code, st.assignState)
	}
	if code, a := callAssign(t, h, "POST", "/api/assign/create", `{}`); code != 200 || !a.Created || len(a.State.Members) != 8 || !a.State.Writable {
		t.Fatalf("demo create: %d %+v", code, a)
	}
	if code, a := callAssign(t, h, "POST", "/api/assign/reset", `{"members": 3}`); code != 200 || len(a.Members) != 3 {
		t.Fatalf("demo reset: %d %+v", code, a)
	}
	if code, a := callAssign(t, h, "POST", "/api/assign/pick", `{"n": 3}`); code != 200 || strings.Join(a.Picked, ",") != "proxy-01,proxy-02,proxy-03" {
		t.Fatalf("demo pick: %d %+v", code, a)
	}
	// The LLM demo's limits and cooldowns run on the in-process server too.
	if code, a := callAssign(t, h, "POST", "/api/assign/llm", `{"on": true}`); code != 200 || len(a.Members) != 4 || a.LLM == nil {
		t.Fatalf("demo llm: %d %+v", code, a)
	}
	if code, a := callAssign(t, h, "POST", "/api/assign/pick", `{"n": 100}`); code != 200 || len(a.Picked) < 18 || len(a.Picked) > 20 {
		t.Fatalf("demo llm pick 100: %d %d picks %+v", code, len(a.Picked), a.Members)
	}
}

// FuzzAssignBody: the page's decoders answer any body with a value in
// range or a 4xx naming a field, never a panic.
func FuzzAssignBody(f *testing.F) {
	for _, s := range []string{`{"n": 5}`, `{"member": "proxy-01", "policy": "zero"}`, `{"members": 8}`, `{"rate": 500}`, `{"n": 1e400}`, `{"member": null}`, `{}`, `[]`, `{"rate": "1"}`,
		`{"rate": 1e-400}`, `{"n": 1.0000000000000001}`, `{"policy": null, "member": "a"}`, `{"members": 8, "members": 9}`,
		`{"seconds": 30}`, `{"id": "3", "member": "proxy-01"}`, `{"id": 3}`, `{"cap": 2}`, `{"cap": -1}`} {
		for e := range 8 {
			f.Add(uint8(e), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, endpoint uint8, body []byte) {
		var aerr *apiError
		switch endpoint % 8 {
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
		case 5:
			var sec int
			sec, aerr = decodeAcquire(body)
			if aerr == nil && (sec < 1 || sec > assignMaxCoolFor) {
				t.Fatalf("%q: seconds %d", body, sec)
			}
		case 6:
			var l assign.Lease
			l, aerr = decodeRelease(body)
			if aerr == nil && (l.ID == "" || l.Member == "") {
				t.Fatalf("%q: lease %+v accepted", body, l)
			}
		case 7:
			var n int
			n, aerr = decodeConcurrency(body)
			if aerr == nil && (n < 0 || n > assignMaxCap) {
				t.Fatalf("%q: cap %d", body, n)
			}
		}
		if aerr != nil && (aerr.status < 400 || aerr.status > 499 || aerr.msg == "") {
			t.Fatalf("%q: %+v", body, aerr)
		}
	})
}

// dbSize is how many keys srv holds.
func dbSize(t *testing.T, srv *assigntest.Server) string {
	t.Helper()
	return srv.MustDo("DBSIZE")
}

// TestAssignGetWritesNothing: GET /api/assign only reads — an <img> on
// any site can send it — so the pool is made by POST /api/assign/create,
// which a cross-site request cannot send (before, the first GET created
// the pool in Redis).
func TestAssignGetWritesNothing(t *testing.T) {
	srv := assigntest.Start(t)
	h := assignHandler(t, srv.URL)
	for range 2 {
		if code, st := callAssign(t, h, "GET", "/api/assign", ""); code != 200 || st.Exists || len(st.Members) != 0 {
			t.Fatalf("GET on an empty Redis: %d %+v", code, st.assignState)
		}
	}
	if n := dbSize(t, srv); n != ":0" {
		t.Fatalf("after two GETs Redis holds %s keys, want none", n)
	}
	for i, hdr := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"},
		{"Origin": "https://evil.example", "Content-Type": "application/json"},
		{"Content-Type": "text/plain"},
	} {
		req := localRequest("POST", "/api/assign/create", strings.NewReader(`{}`))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden {
			t.Errorf("step %d: a cross-site create %v: %d, want 403", i, hdr, rec.Code)
		}
	}
	if n := dbSize(t, srv); n != ":0" {
		t.Fatalf("after cross-site creates Redis holds %s keys, want none", n)
	}
	if code, a := callAssign(t, h, "POST", "/api/assign/create", `{"members": 4}`); code != 200 || !a.Created || len(a.State.Members) != 4 {
		t.Fatalf("create: %d %+v", code, a)
	}
}

// TestAssignRedisDownThenUp: a Redis that is down when the lab is first
// used is used once it is up, without restarting the console (before,
// the first failure was kept for good).
func TestAssignRedisDownThenUp(t *testing.T) {
	srv := assigntest.Start(t)
	srv.Stop()
	h := assignHandler(t, srv.URL)
	if code, a := callAssign(t, h, "GET", "/api/assign", ""); code != 503 || !strings.Contains(a.Error, "has no Redis") {
		t.Fatalf("with Redis down: %d %+v", code, a)
	}
	srv.Restart() // the same port, up again
	if code, st := callAssign(t, h, "GET", "/api/assign", ""); code != 200 || st.Exists {
		t.Fatalf("with Redis up again: %d %+v", code, st)
	}
	if code, a := callAssign(t, h, "POST", "/api/assign/create", `{}`); code != 200 || !a.Created || len(a.State.Members) != 8 {
		t.Fatalf("create once Redis is up: %d %+v", code, a)
	}
}

// TestAssignLabLeavesOthersPoolsAlone: the lab creates, changes and
// resets only a pool it made (its creator recorded by assign.Pool.Create).
// A pool holding only failure records is not created over (before, the
// lab took it for absent and its reset deleted the records); a worker's
// pool is only shown, and even with --assign-write, which lets the lab
// pick from it, never reset. A pool the lab made is its own again after a
// restart of the console.
func TestAssignLabLeavesOthersPoolsAlone(t *testing.T) {
	srv := assigntest.Start(t)
	c := assignClient(t, srv.URL)
	ctx := assigntest.Context(t, time.Minute)
	failures, _ := assign.New(c, "console-test")
	if _, err := failures.RecordFailure(ctx, "http://10.0.0.9:3128", 0); err != nil {
		t.Fatal(err)
	}
	h := assignHandler(t, srv.URL)
	if code, st := callAssign(t, h, "GET", "/api/assign", ""); code != 200 || st.Exists || st.Writable {
		t.Fatalf("a pool of failure records: %d %+v", code, st.assignState)
	}
	if code, a := callAssign(t, h, "POST", "/api/assign/create", `{}`); code != 200 || a.Created || a.State.Writable {
		t.Errorf("create over failure records: %d %+v", code, a)
	}
	if code, a := callAssign(t, h, "POST", "/api/assign/reset", `{}`); code != 403 {
		t.Errorf("reset of failure records: %d %+v", code, a)
	}
	if n := srv.MustDo("HLEN", "afloat:assign:{console-test}:failures"); n != ":1" {
		t.Errorf("the failure records after the lab's requests: HLEN %s, want :1", n)
	}

	// A worker's pool, with --assign-write: picks yes, reset no.
	theirs, _ := assign.New(c, "theirs")
	if _, err := theirs.Add(ctx, 3, "a", "b"); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.RedisURL, cfg.AssignPool, cfg.AssignWrite = srv.URL, "theirs", true
	hw, lab := newHandler(cfg)
	defer lab.stop()
	if code, st := callAssign(t, hw, "GET", "/api/assign", ""); code != 200 || !st.Exists || st.Owned || !st.Writable {
		t.Fatalf("a worker's pool with --assign-write: %d %+v", code, st.assignState)
	}
	if code, a := callAssign(t, hw, "POST", "/api/assign/pick", `{"n": 2}`); code != 200 || len(a.Picked) != 2 {
		t.Errorf("a pick with --assign-write: %d %+v", code, a)
	}
	if code, a := callAssign(t, hw, "POST", "/api/assign/reset", `{}`); code != 403 || !strings.Contains(a.Error, "resets only a pool it created") {
		t.Errorf("a reset of a worker's pool with --assign-write: %d %+v", code, a)
	}
	if st, err := theirs.Status(ctx); err != nil || len(st.Members) != 2 || st.Members[0].Count != 4 {
		t.Errorf("the worker's pool after: %+v %v", st.Members, err)
	}

	// The lab's own pool stays its own across a restart.
	callAssign(t, assignHandlerPool(t, srv.URL, "ours"), "POST", "/api/assign/create", `{}`)
	again := assignHandlerPool(t, srv.URL, "ours")
	if code, st := callAssign(t, again, "GET", "/api/assign", ""); code != 200 || !st.Owned || !st.Writable {
		t.Errorf("the lab's pool seen by a restarted console: %d %+v", code, st.assignState)
	}
	if code, _ := callAssign(t, again, "POST", "/api/assign/reset", `{"members": 2}`); code != 200 {
		t.Errorf("a reset of the lab's pool by a restarted console: %d", code)
	}
}

// assignHandlerPool is assignHandler on another pool.
func assignHandlerPool(t *testing.T, redisURL, pool string) http.Handler {
	t.Helper()
	c := DefaultConfig()
	c.RedisURL, c.AssignPool = redisURL, pool
	h, lab := newHandler(c)
	t.Cleanup(lab.stop)
	return h
}
