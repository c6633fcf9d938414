//go:build embedetcd

package agent_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/afloat/afloat/quota/agent"
	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/servicetest"
)

// rotationConfig is a cluster whose leases last a second, so that the
// region renews several times in each step of a rotation. %s is eu's
// entry.
const rotationConfig = `regions:
  eu: %s
  us: {token: "us-token-0123456789"}
tenants:
  - {name: acme, rate: 200, burst: 400, lease_duration: 1s, skew_margin: 100ms}
operators:
  alice: {token: "alice-token-0123456789"}
`

// TestTokenRotationUnderTraffic rotates region eu's token without a
// restart, under traffic, as docs/quota/operations.md's "Rotating a token"
// says:
// the coordinator accepts the new token besides the old (SIGHUP), the
// agent presents the new one (SIGHUP), the coordinator drops the old
// (SIGHUP). No renewal is refused on the way; a bad file sent between is
// refused whole and the config in use stays; the old token is refused at
// the end, the new one taken; no log holds a token; the merged event
// logs check at 0 violations.
func TestTokenRotationUnderTraffic(t *testing.T) {
	if testing.Short() {
		t.Skip("about 9 s of renewals: make test-long")
	}
	const (
		oldTok = "eu-token-old-0123456789"
		newTok = "eu-token-new-0123456789"
	)
	dir := t.TempDir()
	coordFile, euFile := filepath.Join(dir, "coordinator.yaml"), filepath.Join(dir, "eu.yaml")
	write := func(path, eu string) {
		t.Helper()
		opstest.Must(t, os.WriteFile(path, []byte(fmt.Sprintf(rotationConfig, eu)), 0o600))
	}
	entry := func(tok string, accepted ...string) string {
		if len(accepted) == 0 {
			return fmt.Sprintf("{token: %q}", tok)
		}
		return fmt.Sprintf("{token: %q, accepted_tokens: [%q]}", tok, accepted[0])
	}
	write(coordFile, entry(oldTok))
	write(euFile, entry(oldTok))
	initial, err := os.ReadFile(coordFile)
	opstest.Must(t, err)

	c := servicetest.New(t, string(initial))
	coordLog, euLog := &opstest.Buffer{}, &opstest.Buffer{}
	coordHup, euHup := make(chan struct{}), make(chan struct{})
	coord := c.Coordinator(replica.Options{ConfigFile: coordFile, Reload: coordHup, Logger: slog.New(slog.NewTextHandler(coordLog, nil))})
	eu := c.Agent(agent.Options{Name: "eu", ConfigFile: euFile, Reload: euHup, Logger: slog.New(slog.NewTextHandler(euLog, nil))}, nil)
	opstest.WaitFor(t, "eu's lease", func() bool { code, _ := opstest.Readyz(t, eu.URL); return code == 200 })
	load := eu.Load("acme", 1)

	renewals := func() int64 { return eu.Limiter().RunStats().Renewals }
	renewed := func(what string) {
		t.Helper()
		from := renewals()
		opstest.WaitFor(t, "three renewals after "+what, func() bool { return renewals() >= from+3 })
	}
	logged := func(buf *opstest.Buffer, line string, n int) {
		t.Helper()
		opstest.WaitFor(t, fmt.Sprintf("%q logged %d times", line, n), func() bool { return strings.Count(buf.String(), line) >= n })
	}
	renewed("the start")
	start := eu.Limiter().RunStats()

	// 1. The coordinator accepts both.
	write(coordFile, entry(oldTok, newTok))
	coordHup <- struct{}{}
	logged(coordLog, `msg="quota coordinator: config reloaded"`, 1)
	if !strings.Contains(coordLog.String(), "tokens_changed=[regions.eu]") {
		t.Errorf("the coordinator's reload does not name regions.eu as changed:\n%s", coordLog)
	}
	renewed("the coordinator took the new token")
	// 2. The agent presents the new one.
	write(euFile, entry(newTok))
	euHup <- struct{}{}
	logged(euLog, `msg="quota region: config reloaded"`, 1)
	if !strings.Contains(euLog.String(), "token_changed=true") {
		t.Errorf("the agent's reload does not say its token changed:\n%s", euLog)
	}
	renewed("the agent took the new token")
	// A bad file is refused whole: the config in use stays.
	opstest.Must(t, os.WriteFile(coordFile, []byte("regions: [\n"), 0o600))
	coordHup <- struct{}{}
	logged(coordLog, `msg="quota coordinator: config not reloaded; the one in use stays"`, 1)
	write(coordFile, entry(oldTok, newTok)+"\n  mars: {token: \"mars-token-0123456789\"}") // a region added: a restart's
	coordHup <- struct{}{}
	logged(coordLog, `msg="quota coordinator: config not reloaded; the one in use stays"`, 2)
	renewed("two refused reloads")
	// 3. The coordinator drops the old one.
	write(coordFile, entry(newTok))
	coordHup <- struct{}{}
	logged(coordLog, `msg="quota coordinator: config reloaded"`, 2)
	renewed("the coordinator dropped the old token")
	load.Stop()

	end := eu.Limiter().RunStats()
	if end.RenewFailures != start.RenewFailures || end.Renewals-start.Renewals < 12 {
		t.Errorf("over the rotation: %d renewals, %d failed; want 12 or more, none failed; the agent's log:\n%s", end.Renewals-start.Renewals, end.RenewFailures-start.RenewFailures, euLog)
	}
	if load.Admitted() == 0 {
		t.Error("the load had nothing admitted")
	}
	for _, tc := range []struct {
		tok  string
		code int
	}{{oldTok, http.StatusUnauthorized}, {newTok, http.StatusOK}, {"us-token-0123456789", http.StatusOK}} {
		if code, _ := opstest.Call(t, "GET", coord.URL+"/v1/region/tenants", tc.tok, "", ""); code != tc.code {
			t.Errorf("after the rotation, a token of %d bytes: %d, want %d", len(tc.tok), code, tc.code)
		}
	}
	opstest.Must(t, eu.Stop())
	opstest.Must(t, coord.Stop())
	for _, l := range []string{coordLog.String(), euLog.String()} {
		for _, tok := range []string{oldTok, newTok, "alice-token-0123456789", "us-token-0123456789"} {
			if strings.Contains(l, tok) {
				t.Errorf("a log holds a token:\n%s", l)
			}
		}
	}
	if rep, _ := c.Check(); rep.Violations != 0 {
		t.Errorf("%d violations: %v", rep.Violations, rep.Messages)
	}
}
