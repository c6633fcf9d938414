package replica

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	alertsFile     = "../../../docs/quota-alerts.yml"
	alertTestsFile = "../../../docs/quota-alerts.test.yml"
)

// alertRules is the part of a Prometheus rules file the checks read.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

var (
	// stringRe is a PromQL string literal: label values are not names.
	stringRe = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	// identRe is a PromQL identifier: a metric name (colons for recorded
	// ones), a function, a keyword or a label name.
	identRe = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	// headingRe is a Markdown heading, whose anchor GitHub derives from
	// its text.
	headingRe = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
)

// anchor is the GitHub anchor of a heading's text: lower case, spaces to
// hyphens, punctuation dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkAlerts lists what is wrong with the rules file raw: a metric not
// exposed, a recorded name no rule records, a label the metrics lack, an
// alert without a runbook_url to a heading of docs/quota/operations.md or
// without a test in tests.
func checkAlerts(t *testing.T, raw []byte, have map[string][]string, doc, tests string) []string {
	t.Helper()
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	var rf alertRules
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		return []string{fmt.Sprintf("%s: %v", alertsFile, err)}
	}
	anchors := map[string]bool{}
	for _, m := range headingRe.FindAllStringSubmatch(doc, -1) {
		anchors[anchor(m[1])] = true
	}
	recorded := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
		}
	}
	alerts := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			e := stringRe.ReplaceAllString(r.Expr, `""`)
			afloat := 0
			labels := map[string]bool{}
			for _, id := range identRe.FindAllString(e, -1) {
				switch {
				case strings.Contains(id, ":"):
					if !recorded[id] {
						bad("rule %s: %s is recorded by no rule", name, id)
					}
				case strings.HasPrefix(id, "afloat_"):
					afloat++
					ls, ok := have[id]
					if !ok {
						bad("rule %s: metric %s is not exposed", name, id)
					}
					for _, l := range ls {
						labels[l] = true
					}
				}
			}
			if r.Alert == "" {
				continue
			}
			alerts++
			if afloat == 0 {
				bad("alert %s names no afloat metric", name)
			}
			for _, m := range matcherRe.FindAllStringSubmatch(r.Expr, -1) {
				for _, l := range labelRe.FindAllStringSubmatch(m[2], -1) {
					if !slices.Contains(have[m[1]], l[1]) {
						bad("alert %s: %s has no label %q", name, m[1], l[1])
					}
				}
			}
			for _, m := range byRe.FindAllStringSubmatch(r.Expr, -1) {
				for _, l := range strings.Split(m[1], ",") {
					if l = strings.TrimSpace(l); l != "" && !labels[l] {
						bad("alert %s: grouped by %q, a label none of its metrics has", name, l)
					}
				}
			}
			url := r.Annotations["runbook_url"]
			if a, ok := strings.CutPrefix(url, "docs/quota/operations.md#"); !ok || !anchors[a] {
				bad("alert %s: runbook_url %q is not a heading of docs/quota/operations.md", name, url)
			}
			if !strings.Contains(tests, "alertname: "+r.Alert+"\n") {
				bad("alert %s: no test in %s", name, alertTestsFile)
			}
		}
	}
	if alerts == 0 {
		bad("no alerts")
	}
	return problems
}

// TestAlertRulesNameExposedMetrics: every metric docs/quota-alerts.yml
// queries is one /metrics exposes, with the labels it matches and groups
// by; every alert's runbook_url is a section of docs/quota/operations.md and
// every alert has a test in docs/quota-alerts.test.yml. And the check catches
// each planted mistake below.
func TestAlertRulesNameExposedMetrics(t *testing.T) {
	have := exposed(t)
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	docRaw, err := os.ReadFile(quotaDoc)
	if err != nil {
		t.Fatal(err)
	}
	testsRaw, err := os.ReadFile(alertTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	doc, tests := string(docRaw), string(testsRaw)
	for _, p := range checkAlerts(t, raw, have, doc, tests) {
		t.Error(p)
	}
	for i, tc := range []struct{ what, from, to, want string }{
		{"a metric not exposed", "afloat_quota_region_tenants{", "afloat_quota_region_tenantz{", "is not exposed"},
		{"a histogram series not exposed", "afloat_quota_region_decision_duration_seconds_bucket", "afloat_quota_region_decision_duration_seconds_buckets", "is not exposed"},
		{"a label the metric lacks", `renewals_total{result="failed"}`, `renewals_total{outcome="failed"}`, `has no label "outcome"`},
		{"a tenant label the aggregates lack", `tenants{state="none"}`, `tenants{state="none", tenant="acme"}`, `has no label "tenant"`},
		{"grouping by a label none has", "min by (region)", "min by (region, zone)", `grouped by "zone"`},
		{"a recorded name none records", "scalar(afloat:quota_ledger_write_capacity_ops:per_second)", "scalar(afloat:quota_ledger_capacity:per_second)", "recorded by no rule"},
		{"a runbook section missing", "docs/quota/operations.md#quotanoleader", "docs/quota/operations.md#quota-no-leader", "is not a heading"},
		{"an alert without a test", "alert: QuotaDecisionLatencyHigh", "alert: QuotaDecisionsSlow", "no test"},
	} {
		if !strings.Contains(string(raw), tc.from) {
			t.Fatalf("step %d: %s: %q not in the rules", i, tc.what, tc.from)
		}
		found := false
		for _, p := range checkAlerts(t, []byte(strings.Replace(string(raw), tc.from, tc.to, 1)), have, doc, tests) {
			found = found || strings.Contains(p, tc.want)
		}
		if !found {
			t.Errorf("step %d: %s: not caught (want a problem naming %q)", i, tc.what, tc.want)
		}
	}
}

// promtool is the path of Prometheus's promtool, or a skip (a failure
// when AFLOAT_REQUIRE_PROMTOOL is set, as make test sets it after
// installing Debian's prometheus package).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("AFLOAT_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("promtool is not on PATH and AFLOAT_REQUIRE_PROMTOOL is set: %v", err)
		}
		t.Skip("promtool is not on PATH (Debian's prometheus package brings it; make deps installs it)")
	}
	return p
}

// TestAlertRulesMutation: promtool's tests of the rules catch a broken
// rule. Each mutation below rewrites one rule in a copy of the rules
// file, and promtool test rules must fail on the copy, run with the
// tests of that alert only (a run of all of them takes a second). The
// unmutated copy, filtered the same way, must pass: a failure for
// another reason would prove nothing.
func TestAlertRulesMutation(t *testing.T) {
	tool := promtool(t)
	rules, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	testsRaw, err := os.ReadFile(alertTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	var tf map[string]any
	if err := yaml.Unmarshal(testsRaw, &tf); err != nil {
		t.Fatal(err)
	}
	// run writes rules and the tests of alert into a folder of their
	// own and runs promtool on them.
	run := func(t *testing.T, rules, alert string) (bool, string, error) {
		dir, err := os.MkdirTemp(t.TempDir(), "alerts")
		if err != nil {
			return false, "", err
		}
		var kept []any
		for _, g := range tf["tests"].([]any) {
			for _, a := range g.(map[string]any)["alert_rule_test"].([]any) {
				if a.(map[string]any)["alertname"] == alert {
					kept = append(kept, g)
					break
				}
			}
		}
		if len(kept) == 0 {
			return false, "", fmt.Errorf("no test of %s in %s", alert, alertTestsFile)
		}
		out := map[string]any{}
		for k, v := range tf {
			out[k] = v
		}
		out["tests"] = kept
		b, err := yaml.Marshal(out)
		if err != nil {
			return false, "", err
		}
		if err := os.WriteFile(filepath.Join(dir, "quota-alerts.yml"), []byte(rules), 0o644); err != nil {
			return false, "", err
		}
		if err := os.WriteFile(filepath.Join(dir, "t.yml"), b, 0o644); err != nil {
			return false, "", err
		}
		cmd := exec.Command(tool, "test", "rules", "t.yml")
		cmd.Dir = dir
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err = cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			return false, "", fmt.Errorf("promtool: %w", err)
		}
		return err == nil, buf.String(), nil
	}
	mutations := []struct{ alert, what, from, to string }{
		{"QuotaNoLeader", "no absent(): a Prometheus that scrapes no replica stays silent", "\n            or absent(afloat_quota_coordinator_leader)", ""},
		{"QuotaNoLeader", "for: 10m", "for: 1m\n        labels:\n          severity: page\n        annotations:\n          summary: No coordinator", "for: 10m\n        labels:\n          severity: page\n        annotations:\n          summary: No coordinator"},
		{"QuotaRegionWithoutLease", "max over the agents: a standby pages", "min by (region) (afloat_quota_region_tenants", "max by (region) (afloat_quota_region_tenants"},
		{"QuotaRegionWithoutLease", "more than 3 tenants", `{state="none"}) > 0`, `{state="none"}) > 3`},
		{"QuotaRenewalsFailing", "a threshold of a half", "            > 0.1\n", "            > 0.5\n"},
		{"QuotaRenewalsFailing", "for: 1m: a failover's burst pages", "for: 5m", "for: 1m"},
		{"QuotaRenewalsFailing", "a standby's refusals counted", `sum by (region) (rate(afloat_quota_region_renewals_total{result="failed"}[2m]) unless on (job, instance) afloat_quota_region_standby == 1)
            / sum by (region) (rate(afloat_quota_region_renewals_total[2m]) unless on (job, instance) afloat_quota_region_standby == 1)`,
			`sum by (region) (rate(afloat_quota_region_renewals_total{result="failed"}[2m]))
            / sum by (region) (rate(afloat_quota_region_renewals_total[2m]))`},
		{"QuotaLedgerTxnErrors", "fenced counted as an error", `result=~"error|unknown"`, `result=~"error|unknown|fenced"`},
		{"QuotaLedgerTxnErrors", "unknown left out", `result=~"error|unknown"`, `result="error"`},
		{"QuotaEventLogWriteFailures", "the agents' journal left out", "\n            or sum by (job, instance, region) (increase(afloat_quota_region_journal_failures_total[5m])) > 0", ""},
		{"QuotaLedgerWritesNearCapacity", "a capacity of 14,000 ops/s", "vector(12000)", "vector(14000)"},
		{"QuotaLedgerWritesNearCapacity", "at 70 % of capacity", "> 0.8 * scalar", "> 0.7 * scalar"},
		{"QuotaDecisionLatencyHigh", "over 10 ms", "> 0.005\n", "> 0.01\n"},
	}
	alerts := map[string]bool{}
	for _, m := range mutations {
		alerts[m.alert] = true
	}
	var wg sync.WaitGroup
	for alert := range alerts {
		wg.Go(func() {
			switch ok, out, err := run(t, string(rules), alert); {
			case err != nil:
				t.Errorf("%s: %v", alert, err)
			case !ok:
				t.Errorf("%s: the rules as they are fail their tests:\n%s", alert, out)
			}
		})
	}
	for i, m := range mutations {
		if strings.Count(string(rules), m.from) != 1 {
			t.Fatalf("step %d: %s: %q is not once in the rules", i, m.what, m.from)
		}
		wg.Go(func() {
			switch ok, _, err := run(t, strings.Replace(string(rules), m.from, m.to, 1), m.alert); {
			case err != nil:
				t.Errorf("step %d: %s, %s: %v", i, m.alert, m.what, err)
			case ok:
				t.Errorf("step %d: %s, %s: promtool's tests pass, want a failure", i, m.alert, m.what)
			}
		})
	}
	wg.Wait()
}
