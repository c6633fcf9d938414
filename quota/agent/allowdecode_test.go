package agent

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/afloat/afloat/quota"
)

var allowBodies = []string{
	`{"tenant":"acme","endpoint":"/","n":1}`,
	` { "tenant" : "acme" , "endpoint" : "/search" , "n" : 25 } ` + "\n",
	`{"n":-3,"tenant":"a"}`,
	`{}`,
	`{"tenant":"acme"}`,
	`{"tenant":"ac\u006de"}`,
	`{"Tenant":"acme"}`,
	`{"tenant":"acme","tenant":"beta"}`,
	`{"tenant":"acme","extra":1}`,
	`{"n":1.5}`,
	`{"n":1e3}`,
	`{"n":01}`,
	`{"n":99999999999999999999}`,
	`{"n":null}`,
	`{"n":0}`,
	`{"n":-0}`,
	`{"n":1e-400}`,
	`{"tenant":"fast","tenant":"acme"}`,
	`{"tenant":"fast","Tenant":"acme"}`,
	`{"tenant":"acme"} {"tenant":"b"}`,
	`{"tenant":"acme"}}`,
	`{"tenant":"acme",}`,
	`{"tenant":"é"}`,
	`[1]`,
	``,
	`{"tenant":"acme"`,
}

func TestDecodeAllowAgreesWithStrictPath(t *testing.T) {
	fast := 0
	for _, body := range allowBodies {
		got, err := decodeAllow([]byte(body))
		want, werr := decodeAllowStrict([]byte(body))
		if (err == nil) != (werr == nil) || (err == nil && got != want) {
			t.Errorf("%q: decodeAllow = %+v, %v; strict path = %+v, %v", body, got, err, want, werr)
		}
		if _, ok := decodeAllowFast([]byte(body)); ok {
			fast++
		}
	}
	// The first five and n 0 and -0 take the fast path (the range is
	// the handler's to check); the rest are strictjson's.
	if fast != 7 {
		t.Errorf("%d bodies took the fast path, want 7", fast)
	}
}

func TestDecodeAllowAllocations(t *testing.T) {
	body := []byte(`{"tenant":"acme","endpoint":"/search","n":1}`)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := decodeAllow(body); err != nil {
			t.Fatal(err)
		}
	})
	// The tenant's and the endpoint's strings; the strict path makes
	// many more here.
	if allocs > 2 {
		t.Errorf("decodeAllow allocates %v times a call, want at most 2", allocs)
	}
}

func FuzzDecodeAllow(f *testing.F) {
	for _, body := range allowBodies {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, ok := decodeAllowFast(body)
		want, werr := decodeAllowStrict(body)
		if ok && (werr != nil || req != want) {
			t.Fatalf("%q: fast path %+v; strict path %+v, %v", body, req, want, werr)
		}

	})
}

func BenchmarkDecodeAllow(b *testing.B) {
	body := []byte(`{"tenant":"acme","endpoint":"/search","n":1}`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeAllow(body) //nolint:errcheck
		}
	})
	b.Run("strict", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeAllowStrict(body) //nolint:errcheck
		}
	})
}

// TestAllowRefusesLenientBodies: the decision API refuses what it used to
// read leniently — n of 0, -0 or null (read as the default 1), a tenant
// given twice (the last one spent) — with 400 naming the field and the
// range, and spends nothing.
func TestAllowRefusesLenientBodies(t *testing.T) {
	clock := &fakeClock{}
	a := fixedAgent(t, fronted, clock)
	lease(t, a.Limiter(), a.now(), "acme", 1, 10, 40)
	h := a.Handler()
	post := func(body string) (int, string) {
		req := httptest.NewRequest("POST", "http://127.0.0.1/v1/allow", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for i, c := range []struct{ body, want string }{
		{`{"tenant":"acme","n":0}`, "n 0: want 1 to 1000000"},
		{`{"tenant":"acme","n":-0}`, "n 0: want 1 to 1000000"},
		{`{"tenant":"acme","n":null}`, "n: null"},
		{`{"tenant":"acme","n":1e-400}`, "n: number 1e-400"},
		{`{"tenant":"acme","n":0.5}`, "n: number 0.5: want an integer"},
		{`{"tenant":"globex","tenant":"acme"}`, `tenant: key \"tenant\" given more than once`},
		{`{"tenant":"globex","Tenant":"acme"}`, `Tenant: unknown field (names are case-sensitive`},
		{`{"tenant":"acme","n":1000001}`, "n 1000001: want 1 to 1000000"},
	} {
		code, body := post(c.body)
		if code != http.StatusBadRequest || !strings.Contains(body, c.want) {
			t.Errorf("step %d: %s: %d %s; want 400 with %q", i, c.body, code, body, c.want)
		}
	}
	if st := a.Limiter().Status(a.now(), "acme"); st.Balance != quota.Tokens(40) {
		t.Fatalf("acme's bucket holds %v after refused requests, want all 40 tokens", st.Balance)
	}
	// An absent n is 1, and n as given otherwise.
	if code, body := post(`{"tenant":"acme"}`); code != 200 || !strings.Contains(body, `"remaining":39`) {
		t.Fatalf("absent n: %d %s; want 200 and 39 remaining", code, body)
	}
	if code, body := post(`{"tenant":"acme","n":2}`); code != 200 || !strings.Contains(body, `"remaining":37`) {
		t.Fatalf("n 2: %d %s; want 200 and 37 remaining", code, body)
	}
}
