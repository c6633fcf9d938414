//go:build embedetcd

package agent_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/agent"
	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/etcdmember"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/servicetest"
)

// TestCoordinatorAndRegion: a coordinator on its embedded etcd, a region
// agent, the decision API; then bad input on the decision API; then a
// second coordinator on the same data directory is refused.
func TestCoordinatorAndRegion(t *testing.T) {
	c := servicetest.New(t, opstest.ConfigFile("good.yaml"))
	dir := filepath.Join(c.Dir, "coordinator-etcd")
	c.Coordinator(replica.Options{DataDir: dir})

	// The same data directory again: refused, and why.
	err := c.CoordinatorRefused(replica.Options{DataDir: dir})
	if !errors.Is(err, etcdmember.ErrDataDirInUse) || !strings.Contains(err.Error(), "is locked") {
		t.Fatalf("a second coordinator on one data directory: %v", err)
	}

	base := c.Agent(agent.Options{Name: "eu"}, nil).URL
	allow := func(body string) (int, agent.AllowAnswer, string) {
		resp, err := http.Post(base+"/v1/allow", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var ans agent.AllowAnswer
		json.Unmarshal(raw, &ans)
		return resp.StatusCode, ans, string(raw)
	}
	// Until the first lease, refused with the bounded retry policy.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, ans, raw := allow(`{"tenant":"acme","endpoint":"/","n":1}`)
		if code != 200 {
			t.Fatalf("allow: %d %s", code, raw)
		}
		if ans.Allowed {
			break
		}
		if ans.RetryAfter <= 0 {
			t.Fatalf("refused without a retry_after: %s", raw)
		}
		if time.Now().After(deadline) {
			t.Fatal("no admission within 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i, tc := range []struct {
		body string
		code int
		want string
	}{
		{`{"tenant":"mallory"}`, 404, `tenant \"mallory\": not served in region \"eu\"`},
		{`{"tenant":"acme","n":-1}`, 400, "n -1: want 1 to 1000000"},
		{`{"tenant":"acme","extra":1}`, 400, "unknown field"},
		{`{"tenant":"acme"} {}`, 400, "want one object"},
		{`{"tenant":"` + strings.Repeat("a", 5000) + `"}`, 413, "body over 4096 bytes"},
	} {
		code, _, raw := allow(tc.body)
		if code != tc.code || !strings.Contains(raw, tc.want) {
			t.Errorf("step %d: %d %s, want %d naming %q", i, code, raw, tc.code, tc.want)
		}
	}
	resp, err := http.Post(base+"/v1/allow", "text/plain", bytes.NewReader([]byte(`{"tenant":"acme"}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 415 {
		t.Fatalf("text/plain: %d", resp.StatusCode)
	}
}
