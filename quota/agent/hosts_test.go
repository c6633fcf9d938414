package agent

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/internal/opstest"
)

// TestAgentAnswersOnlyItsHosts: the decision API, /v1/status and
// /metrics refuse a request whose Host is not one of the agent's names —
// a DNS-rebinding page (Host: evil.example) spent a tenant's tokens and
// read the status and the metrics — and spend nothing; loopback names
// are answered.
func TestAgentAnswersOnlyItsHosts(t *testing.T) {
	clock := &fakeClock{}
	a := fixedAgent(t, fronted, clock)
	lease(t, a.Limiter(), a.now(), "acme", 1, 10, 40)
	ts := httptest.NewServer(a.Handler())
	defer ts.Close()
	do := func(method, path, host string) (int, string) {
		t.Helper()
		var body io.Reader
		if method == "POST" {
			body = strings.NewReader(`{"tenant":"acme","n":5}`)
		}
		req, err := http.NewRequest(method, ts.URL+path, body)
		opstest.Must(t, err)
		req.Header.Set("Content-Type", "application/json")
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		opstest.Must(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	balance := func() quota.Micro { return a.Limiter().Status(a.now(), "acme").Balance }
	for i, host := range []string{"evil.example", "evil.example:" + strings.Split(ts.Listener.Addr().String(), ":")[1],
		"EVIL.example.", "localhost.evil.example", "127.0.0.1.nip.io", "0.0.0.0", "[::]:80", "10.0.0.1"} {
		for _, r := range []struct{ method, path string }{{"POST", "/v1/allow"}, {"GET", "/v1/status"}, {"GET", "/metrics"}, {"GET", "/readyz"}} {
			code, body := do(r.method, r.path, host)
			if code != http.StatusMisdirectedRequest || !strings.Contains(body, "DNS rebinding") || strings.Contains(body, "acme") {
				t.Errorf("step %d: %s %s with Host %q: %d %s; want 421 and nothing of the agent's state", i, r.method, r.path, host, code, body)
			}
		}
	}
	if b := balance(); b != quota.Tokens(40) {
		t.Fatalf("refused requests spent %v tokens", (quota.Tokens(40) - b).Float())
	}
	for i, host := range []string{"", "localhost", "localhost:7080", "127.0.0.1:7080", "[::1]:7080", "api.localhost"} {
		if code, body := do("POST", "/v1/allow", host); code != 200 {
			t.Errorf("step %d: Host %q: %d %s, want 200", i, host, code, body)
		}
	}
	if b := balance(); b != quota.Tokens(10) {
		t.Fatalf("six admissions of 5 left %v tokens, want 10", b.Float())
	}
}

// TestAgentListensOnLoopbackUnlessAllowed: a --listen address beyond
// loopback is refused, naming the flag that allows it.
func TestAgentListensOnLoopbackUnlessAllowed(t *testing.T) {
	for i, addr := range []string{"0.0.0.0:7080", ":7080", "[::]:7080", "10.0.0.5:7080", "example.com:7080"} {
		_, err := New(Options{Config: opstest.MustConfig(t, good), Name: "eu", Coordinators: []string{"http://127.0.0.1:1"},
			Listen: addr, Logger: opstest.QuietLog()})
		if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), "--listen "+addr+": beyond loopback") ||
			!strings.Contains(err.Error(), "--allow-remote") {
			t.Errorf("step %d: --listen %s: %v, want a refusal naming --allow-remote", i, addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "localhost:0", "127.0.0.2:7080"} {
		if _, err := New(Options{Config: opstest.MustConfig(t, good), Name: "eu", Coordinators: []string{"http://127.0.0.1:1"},
			Listen: addr, Logger: opstest.QuietLog()}); err != nil {
			t.Errorf("--listen %s: %v", addr, err)
		}
	}
}
