package drill

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestScaleExpr(t *testing.T) {
	for i, tc := range []struct {
		speed    time.Duration
		in, want string
	}{
		{5 * time.Second, `rate(x[5m])`, `rate(x[25s])`},
		{5 * time.Second, `sum(rate(x{code=~"5.."}[1h])) / sum(rate(x[1h]))`, `sum(rate(x{code=~"5.."}[5m])) / sum(rate(x[5m]))`},
		{5 * time.Second, `max_over_time(rate(x[5m])[1h:1m])`, `max_over_time(rate(x[25s])[5m:5s])`},
		{5 * time.Second, `avg_over_time(x[1h:])`, `avg_over_time(x[5m:])`},
		{5 * time.Second, `x offset 1d`, `x offset 2h`},
		{5 * time.Second, `x offset -1h`, `x offset -5m`},
		{5 * time.Second, `x{path="/a[5m]"}[3d]`, `x{path="/a[5m]"}[6h]`},
		{time.Second, `rate(x[1m30s])`, `rate(x[1s500ms])`},
		{100 * time.Millisecond, `rate(x[5s])`, `rate(x[8ms])`},
		{100 * time.Millisecond, `rate(x[1s])`, `rate(x[2ms])`},
		{100 * time.Millisecond, `rate(x[1ms])`, `rate(x[1ms])`},
		{RealTime, `rate(x[5m]) offset 1w`, `rate(x[5m]) offset 1w`},
		{10 * time.Minute, `rate(x[3d])`, `rate(x[30d])`},
	} {
		got, err := scaleExpr(tc.in, tc.speed)
		if err != nil || got != tc.want {
			t.Errorf("step %d: scaleExpr(%s, %v) = %s, %v; want %s", i, tc.in, tc.speed, got, err, tc.want)
		}
	}
	if _, err := scaleExpr(`rate(x[5q])`, time.Second); err == nil {
		t.Error("a window of 5q: no error")
	}
}

// TestScaleRules: the drill's own rules scaled to 5 s a minute read a
// twelfth of their windows, keep their comments, and are rules promtool
// takes.
func TestScaleRules(t *testing.T) {
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ScaleRules(raw, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{
		"record: job:slo_errors_per_request:ratio_rate1h",
		`sum by (job) (rate(http_requests_total{code=~"5.."}[5m]))`,
		`/ sum by (job) (rate(http_requests_total{code!="429"}[5m]))`,
		`rate(http_requests_total{code=~"5.."}[6h]))`, // 3d
		"for: 10s",
		"# The error ratio of the objective over each window the alerts read:",
		"job:slo_errors_per_request:ratio_rate1h > (14.4 * 0.001)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("scaled rules lack %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "[1h]") || strings.Contains(s, "for: 2m") {
		t.Errorf("scaled rules keep a window of real time:\n%s", s)
	}
	if _, err := ScaleRules([]byte("groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        for: soon\n"), time.Second); err == nil || !strings.Contains(err.Error(), "A: for:") {
		t.Errorf("a for: of soon: %v, want an error naming the rule", err)
	}
	tool := promtool(t)
	file := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
}
