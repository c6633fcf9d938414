package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/cmd/afloat/internal/drillcli"
	"github.com/afloat/afloat/drill"
	"github.com/afloat/afloat/internal/vclock"
	"github.com/afloat/afloat/sim"

	"net/http/httptest"
)

// TestDrillRefusesBadCommandLines: afloat drill names the flag at fault
// and what it allows, exit 2, before it listens.
func TestDrillRefusesBadCommandLines(t *testing.T) {
	t.Setenv(drillcli.TokenEnv, "")
	for i, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--speed", "fast"}, `speed "fast": want realtime, or the wall time of a simulated minute from 100ms to 10m0s`},
		{[]string{"--speed", "50ms"}, `speed "50ms": want realtime`},
		{[]string{"--scenario", "doom"}, `scenario "doom": want one of steady, bad-deploy, surge, cache-flush, mystery`},
		{[]string{"--seed", "-1"}, `--seed "-1": want an integer from 0 to 4294967295`},
		{[]string{"--listen", "0.0.0.0:0"}, `listen "0.0.0.0:0" is beyond loopback`},
		{[]string{"--listen", "0.0.0.0:0", "--allow-remote"}, "--allow-remote needs a token of your own"},
		{[]string{"--listen", "9000"}, `listen "9000": want host:port`},
		{[]string{"--listen", "127.0.0.1:99999"}, `listen "127.0.0.1:99999": want a port from 0 to 65535`},
		{[]string{"--speeed", "1s"}, "unknown flag --speeed (did you mean --speed?)"},
	} {
		status, out, errOut := call(t, "", append([]string{"drill", "--listen", "127.0.0.1:0"}, tc.args...)...)
		if status != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("step %d: afloat drill %q: status %d, stdout %q, stderr %q; want 2 saying %q", i, tc.args, status, out, errOut, tc.want)
		}
	}
}

// vc adapts the virtual clock to drill.Clock.
type vc struct{ *vclock.Clock }

func (c vc) AfterFunc(d time.Duration, f func()) drill.Timer { return c.Clock.AfterFunc(d, f) }

// TestDrillLeverCommand: afloat drill lever pulls a lever of a running
// drill, flags before or after the lever; an unknown lever, a value out
// of range, a wrong token and a lever after the end are refused with the
// drill's words, exit 2, and change nothing.
func TestDrillLeverCommand(t *testing.T) {
	const token = "drill-token-0123456789"
	clock := vclock.New(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	cfg := drill.DefaultConfig()
	cfg.Scenario, cfg.Seed, cfg.Speed, cfg.Token, cfg.Clock = "bad-deploy", 7, time.Second, token, vc{clock}
	s, err := drill.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	hs := httptest.NewServer(s)
	defer hs.Close()
	addr := strings.TrimPrefix(hs.URL, "http://")
	tokenFile := filepath.Join(t.TempDir(), "drill.token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(drillcli.TokenEnv, "")

	clock.Advance(12500 * time.Millisecond)
	status, out, errOut := call(t, "", "drill", "lever", "rollback", "--addr", addr, "--token-file", tokenFile)
	if status != 0 || !strings.HasPrefix(out, "rollback takes effect at 09:13 (minute 13)") {
		t.Fatalf("drill lever rollback: status %d, stdout %q, stderr %q", status, out, errOut)
	}
	t.Setenv(drillcli.TokenEnv, token)
	status, out, errOut = call(t, "", "drill", "lever", "--addr", addr, "heavy-feature", "false")
	if status != 0 || !strings.HasPrefix(out, "heavy_feature false takes effect at 09:13 (minute 13)") {
		t.Fatalf("drill lever heavy-feature false: status %d, stdout %q, stderr %q", status, out, errOut)
	}
	want := []sim.Action{sim.Press(13, sim.ControlRollback), sim.Switch(13, sim.ControlHeavyFeature, false)}

	for i, tc := range []struct {
		env  string
		args []string
		want string
	}{
		{token, []string{"reboot"}, `drill: invalid lever: control: unknown control "reboot"; want one of fleet_floor`},
		{token, []string{"fleet-floor", "41"}, "drill: invalid lever: value: fleet_floor takes an integer from 0 to 40, got 41"},
		{token, []string{"target-utilization", "high"}, `target_utilization takes a number from 0.2 to 0.95, got "high"`},
		{token, []string{"rollback", "now"}, `rollback takes no value (it is a button), got "now"`},
		{"not-the-token-0123", []string{"rollback"}, "a valid token is required (Authorization: Bearer TOKEN)"},
		{"", []string{"rollback"}, "--token-file: want the drill's token in a FILE, or in AFLOAT_DRILL_TOKEN"},
		{token, []string{}, "want a lever's NAME and its VALUE"},
		{token, []string{"fleet-floor", "20", "21"}, "want a lever's NAME and its VALUE"},
	} {
		t.Setenv(drillcli.TokenEnv, tc.env)
		status, out, errOut := call(t, "", append([]string{"drill", "lever", "--addr", addr}, tc.args...)...)
		if status != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("step %d: drill lever %q: status %d, stdout %q, stderr %q; want 2 saying %q", i, tc.args, status, out, errOut, tc.want)
		}
		if got := s.Status().Actions; !reflect.DeepEqual(got, want) {
			t.Errorf("step %d: actions %v after a refusal, want %v", i, got, want)
		}
	}

	clock.Advance(10 * time.Minute)
	t.Setenv(drillcli.TokenEnv, token)
	status, out, errOut = call(t, "", "drill", "lever", "--addr", addr, "rollback")
	if status != 2 || out != "" || !strings.Contains(errOut, "drill: the drill has ended at 11:00 (minute 120)") {
		t.Errorf("a lever after the end: status %d, stdout %q, stderr %q", status, out, errOut)
	}
	if got := s.Status().Actions; !reflect.DeepEqual(got, want) {
		t.Errorf("actions %v after the end, want %v", got, want)
	}
}

// TestDrillRulesCommand: afloat drill rules scales a rules file's windows
// to the drill's speed, and names what it refuses.
func TestDrillRulesCommand(t *testing.T) {
	rules := filepath.Join("..", "..", "docs", "drill-alerts.yml")
	status, out, errOut := call(t, "", "drill", "rules", "--speed", "5s", rules)
	if status != 0 || !strings.Contains(out, `rate(http_requests_total{code=~"5.."}[5m])`) || strings.Contains(out, "[1h]") || !strings.Contains(out, "for: 10s") {
		t.Fatalf("drill rules --speed 5s: status %d, stderr %q, stdout:\n%s", status, errOut, out)
	}
	status, out, _ = call(t, "groups: []\n", "drill", "rules", "-", "--speed", "realtime")
	if status != 0 || out != "groups: []\n" {
		t.Errorf("drill rules - --speed realtime: status %d, stdout %q", status, out)
	}
	for i, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--speed", "fast", rules}, `speed "fast": want realtime`},
		{[]string{}, "want one rules FILE"},
		{[]string{"nosuch.yml"}, "nosuch.yml"},
		{[]string{"-"}, ""},
	} {
		stdin := "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: rate(x[5q]) > 0\n"
		status, out, errOut := call(t, stdin, append([]string{"drill", "rules"}, tc.args...)...)
		want := tc.want
		if want == "" {
			want = `drill: rules: A: expr: "5q"`
		}
		if status != 2 || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("step %d: drill rules %q: status %d, stdout %q, stderr %q; want 2 saying %q", i, tc.args, status, out, errOut, want)
		}
	}
}
