//go:build embedetcd

package replica_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/servicetest"
)

// TestCoordinatorAnswersOnlyItsHosts: the coordinator's listener — the
// regions' API, the tenants API, /metrics — refuses a request whose Host
// is not one of its names with 421, whatever the token; its loopback
// names, its --listen host and its --advertise host are answered (regions
// call it by the URL followers name, the advertised one).
func TestCoordinatorAnswersOnlyItsHosts(t *testing.T) {
	c := servicetest.New(t, opstest.ConfigFile("operators.yaml"))
	addr := c.Coordinator(replica.Options{Advertise: "http://coord-1.quota.test:7070"}).Addr
	do := func(method, path, host, token, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		opstest.Must(t, err)
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		opstest.Must(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	eu := "eu-token-0123456789abcdef"
	renew := `{"requests":[{"tenant":"acme","region":"eu","seq":1}]}`
	for i, host := range []string{"evil.example", "evil.example:7070", "coord-1.quota.test.evil.example", "0.0.0.0:7070"} {
		for _, r := range []struct{ method, path, token, body string }{
			{"POST", "/v1/renew", eu, renew},
			{"GET", "/v1/region/tenants", eu, ""},
			{"GET", "/v1/tenants", "alice-token-0123456789", ""},
			{"GET", "/metrics", "", ""},
			{"GET", "/readyz", "", ""},
		} {
			if code, body := do(r.method, r.path, host, r.token, r.body); code != http.StatusMisdirectedRequest || strings.Contains(body, "acme") {
				t.Errorf("step %d: %s %s with Host %q: %d %s; want 421", i, r.method, r.path, host, code, body)
			}
		}
	}
	for i, host := range []string{addr, "localhost:7070", "coord-1.quota.test:7070", "COORD-1.quota.test."} {
		if code, body := do("GET", "/healthz", host, "", ""); code != 200 {
			t.Errorf("step %d: Host %q: %d %s, want 200", i, host, code, body)
		}
	}
	// The regions' API, by the advertised name, once the coordinator leads:
	// an agent attaches, then renews as the incarnation it was given.
	deadline := time.Now().Add(30 * time.Second)
	var attach struct {
		Incarnation uint64 `json:"incarnation"`
	}
	for {
		code, body := do("POST", "/v1/region/attach", "coord-1.quota.test:7070", eu, `{"agent":"hosts-test"}`)
		if code == 200 {
			opstest.Must(t, json.Unmarshal([]byte(body), &attach))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("attach by the advertised name: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	renewAs := fmt.Sprintf(`{"incarnation":%d,"requests":[{"tenant":"acme","region":"eu","seq":1}]}`, attach.Incarnation)
	if code, body := do("POST", "/v1/renew", "coord-1.quota.test:7070", eu, renewAs); code != 200 || !strings.Contains(body, `"grant"`) {
		t.Fatalf("renew by the advertised name: %d %s", code, body)
	}
}
