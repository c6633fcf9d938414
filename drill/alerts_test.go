package drill

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

const (
	alertsFile = "../docs/drill-alerts.yml"
	drillDoc   = "../docs/drill.md"
)

// alertTestFiles are the unit tests of the rules: the minutes' and the
// days' (evaluated ten minutes apart).
var alertTestFiles = []string{"../docs/drill-alerts.test.yml", "../docs/drill-alerts-slow.test.yml"}

// rulesFile is the part of a Prometheus rules file the checks read.
type rulesFile struct {
	Groups []struct {
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
	stringRe = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	// identRe is a PromQL identifier: a metric name (colons for recorded
	// ones), a function, a keyword or a label name.
	identRe = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	// selectorRe is a metric with label matchers.
	selectorRe = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\{([^}]*)\}`)
	labelRe    = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)`)
	headingRe  = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	// promqlWords are the functions and keywords the rules use.
	promqlWords = map[string]bool{"sum": true, "max": true, "by": true, "rate": true, "and": true, "or": true, "job": true}
)

// exposed returns the drill's metric names, a histogram's series
// included, with their labels.
func exposed(t *testing.T) map[string][]string {
	t.Helper()
	_, hs, clock := startServer(t, "bad-deploy", time.Second)
	clock.Advance(30 * time.Second)
	_, fams := scrape(t, hs.URL)
	have := map[string][]string{}
	for name, f := range fams {
		var labels []string
		seen := map[string]bool{}
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if !seen[l.GetName()] {
					seen[l.GetName()] = true
					labels = append(labels, l.GetName())
				}
			}
		}
		have[name] = labels
		if f.GetType().String() == "HISTOGRAM" {
			have[name+"_bucket"] = append(labels, "le")
			have[name+"_sum"] = labels
			have[name+"_count"] = labels
		}
	}
	return have
}

// checkRules lists what is wrong with the rules file raw: a metric the
// drill does not expose, a label it lacks, a recorded name no rule
// records, an alert without a runbook_url to a heading of docs/drill.md
// or without a test.
func checkRules(raw []byte, have map[string][]string, doc, tests string) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	var rf rulesFile
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		return []string{err.Error()}
	}
	anchors := map[string]bool{}
	for _, m := range headingRe.FindAllStringSubmatch(doc, -1) {
		anchors[strings.ToLower(strings.ReplaceAll(m[1], " ", "-"))] = true
	}
	recorded := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			recorded[r.Record] = r.Record != ""
		}
	}
	alerts := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			e := stringRe.ReplaceAllString(r.Expr, `""`)
			e = regexp.MustCompile(`\[[0-9a-z]+\]|\{\{.*?\}\}`).ReplaceAllString(e, "")
			for _, id := range identRe.FindAllString(e, -1) {
				switch {
				case strings.Contains(id, ":"):
					if !recorded[id] {
						bad("rule %s: %s is recorded by no rule", name, id)
					}
				case promqlWords[id] || strings.HasPrefix(id, "code"):
				default:
					if _, ok := have[id]; !ok {
						bad("rule %s: metric %s is not exposed", name, id)
					}
				}
			}
			for _, m := range selectorRe.FindAllStringSubmatch(r.Expr, -1) {
				for _, l := range labelRe.FindAllStringSubmatch(m[2], -1) {
					if !strings.Contains(" "+strings.Join(have[m[1]], " ")+" ", " "+l[1]+" ") {
						bad("rule %s: %s has no label %q", name, m[1], l[1])
					}
				}
			}
			if r.Alert == "" {
				continue
			}
			alerts++
			if a, ok := strings.CutPrefix(r.Annotations["runbook_url"], "docs/drill.md#"); !ok || !anchors[a] {
				bad("alert %s: runbook_url %q is not a heading of docs/drill.md", name, r.Annotations["runbook_url"])
			}
			if !strings.Contains(tests, "alertname: "+r.Alert+"\n") {
				bad("alert %s: no test", name)
			}
		}
	}
	if alerts == 0 {
		bad("no alerts")
	}
	return problems
}

// TestAlertRulesNameExposedMetrics: every metric docs/drill-alerts.yml
// queries is one the drill exposes, with the labels it matches; every
// alert's runbook_url is a section of docs/drill.md and every alert has a
// test. And the check catches each planted mistake below.
func TestAlertRulesNameExposedMetrics(t *testing.T) {
	have := exposed(t)
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	docRaw, err := os.ReadFile(drillDoc)
	if err != nil {
		t.Fatal(err)
	}
	var tests string
	for _, f := range alertTestFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tests += string(b)
	}
	doc := string(docRaw)
	for _, p := range checkRules(raw, have, doc, tests) {
		t.Error(p)
	}
	for i, tc := range []struct{ what, from, to, want string }{
		{"a metric not exposed", "rate(cache_misses_total[5m])", "rate(cache_miss_total[5m])", "is not exposed"},
		{"a label the metric lacks", `http_requests_total{code!="429"}[1h]`, `http_requests_total{status!="429"}[1h]`, `has no label "status"`},
		{"a recorded name none records", "job:slo_errors_per_request:ratio_rate2h > (3", "job:slo_errors_per_request:ratio_rate12h > (3", "recorded by no rule"},
		{"a runbook section missing", "docs/drill.md#databasesaturated", "docs/drill.md#database-saturated", "is not a heading"},
		{"an alert without a test", "alert: CacheHitRateCollapse", "alert: CacheHitsCollapse", "no test"},
	} {
		if strings.Count(string(raw), tc.from) != 1 {
			t.Fatalf("step %d: %s: %q is not once in the rules", i, tc.what, tc.from)
		}
		found := false
		for _, p := range checkRules([]byte(strings.Replace(string(raw), tc.from, tc.to, 1)), have, doc, tests) {
			found = found || strings.Contains(p, tc.want)
		}
		if !found {
			t.Errorf("step %d: %s: not caught (want a problem naming %q)", i, tc.what, tc.want)
		}
	}
}

// ruleRun is a rules file and the cases of the unit tests (the test
// groups whose series carry case="…") to run on it.
type ruleRun struct {
	rules string
	cases []string
}

// promtoolRe is promtool test rules's verdict on a test file.
var promtoolRe = regexp.MustCompile(`(?m)^Unit Testing: +(\S+)\n +(SUCCESS|FAILED)`)

// runAlertTests writes each run's rules and the unit tests of its cases
// into a folder, and runs promtool test rules on them all at once — a
// promtool process costs a quarter of a second to start, more than most
// cases — and reports which runs passed, with promtool's output.
func runAlertTests(t *testing.T, tool string, runs []ruleRun) ([]bool, string, error) {
	dir := t.TempDir()
	var tests []map[string]any
	for _, name := range alertTestFiles {
		raw, err := os.ReadFile(name)
		if err != nil {
			return nil, "", err
		}
		var tf map[string]any
		if err := yaml.Unmarshal(raw, &tf); err != nil {
			return nil, "", err
		}
		tests = append(tests, tf)
	}
	args := []string{"test", "rules"}
	owner := map[string]int{} // test file → run
	for r, run := range runs {
		rulesFile := fmt.Sprintf("rules-%d.yml", r)
		if err := os.WriteFile(filepath.Join(dir, rulesFile), []byte(run.rules), 0o644); err != nil {
			return nil, "", err
		}
		found := 0
		for i, tf := range tests {
			var kept []any
			for _, g := range tf["tests"].([]any) {
				series := g.(map[string]any)["input_series"].([]any)[0].(map[string]any)["series"].(string)
				for _, c := range run.cases {
					if strings.Contains(series, `case="`+c+`"`) {
						kept = append(kept, g)
						found++
					}
				}
			}
			if len(kept) == 0 {
				continue
			}
			out := map[string]any{}
			for k, v := range tf {
				out[k] = v
			}
			out["tests"], out["rule_files"] = kept, []string{rulesFile}
			b, err := yaml.Marshal(out)
			if err != nil {
				return nil, "", err
			}
			file := fmt.Sprintf("t-%d-%d.yml", r, i)
			if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
				return nil, "", err
			}
			args = append(args, file)
			owner[file] = r
		}
		if found != len(run.cases) {
			return nil, "", fmt.Errorf("cases %q: %d found in the tests", run.cases, found)
		}
	}
	cmd := exec.Command(tool, args...)
	cmd.Dir = dir
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			return nil, "", fmt.Errorf("promtool: %w", err)
		}
	}
	passed := make([]bool, len(runs))
	for i := range passed {
		passed[i] = true
	}
	verdicts := promtoolRe.FindAllStringSubmatch(buf.String(), -1)
	if len(verdicts) != len(owner) {
		return nil, buf.String(), fmt.Errorf("promtool gave %d verdicts on %d test files", len(verdicts), len(owner))
	}
	for _, v := range verdicts {
		if v[2] != "SUCCESS" {
			passed[owner[v[1]]] = false
		}
	}
	return passed, buf.String(), nil
}

// TestAlertRulesMutation: promtool's tests of the rules catch a broken
// rule. Each mutation rewrites one rule in a copy of the rules file, and
// the case named to catch it must fail on the copy; the unmutated rules,
// with every case, must pass: a failure for another reason would prove
// nothing.
func TestAlertRulesMutation(t *testing.T) {
	tool := promtool(t)
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	rules := string(raw)
	mutations := []struct{ alert, what, from, to, catcher string }{
		{"ErrorBudgetBurnFast", "the hour's threshold at 20×", "ratio_rate1h > (14.4 * 0.001)", "ratio_rate1h > (20 * 0.001)", "hour"},
		{"ErrorBudgetBurnFast", "the hour's burn read over 30 minutes", "ratio_rate1h > (14.4", "ratio_rate30m > (14.4", "hour"},
		{"ErrorBudgetBurnFast", "no short window: the page outlives the errors", "\n            and\n              job:slo_errors_per_request:ratio_rate5m > (14.4 * 0.001)", "", "reset"},
		{"ErrorBudgetBurnFast", "the six hours' threshold at 8×", "ratio_rate6h > (6 * 0.001)", "ratio_rate6h > (8 * 0.001)", "six-hours"},
		{"ErrorBudgetBurnFast", "no six hours' branch", "\n          or\n          (\n              job:slo_errors_per_request:ratio_rate6h > (6 * 0.001)\n            and\n              job:slo_errors_per_request:ratio_rate30m > (6 * 0.001)\n          )", "", "six-hours"},
		{"ErrorBudgetBurnFast", "500s only counted as errors", `rate(http_requests_total{code=~"5.."}[1h])`, `rate(http_requests_total{code="500"}[1h])`, "hour"},
		{"ErrorBudgetBurnFast", "shed requests counted in the ratio", `rate(http_requests_total{code!="429"}[1h])`, `rate(http_requests_total[1h])`, "hour"},
		{"ErrorBudgetBurnSlow", "the day's threshold at 5×", "ratio_rate1d > (3 * 0.001)", "ratio_rate1d > (5 * 0.001)", "one-day"},
		{"ErrorBudgetBurnSlow", "no day's branch", "(\n              job:slo_errors_per_request:ratio_rate1d > (3 * 0.001)\n            and\n              job:slo_errors_per_request:ratio_rate2h > (3 * 0.001)\n          )\n          or\n", "", "one-day"},
		{"ErrorBudgetBurnSlow", "the three days' threshold at 2×", "ratio_rate3d > (1 * 0.001)", "ratio_rate3d > (2 * 0.001)", "three-days"},
		{"DatabaseSaturated", "saturated at 80 %", "(db_utilization_ratio) > 0.9", "(db_utilization_ratio) > 0.8", "database"},
		{"DatabaseSaturated", "for: 5m", "> 0.9\n        for: 2m", "> 0.9\n        for: 5m", "database"},
		{"CacheHitRateCollapse", "a collapse under 30 %", "< 0.5", "< 0.3", "cache"},
		{"CacheHitRateCollapse", "hits over misses", "\n            / (sum by (job) (rate(cache_hits_total[5m])) + sum by (job) (rate(cache_misses_total[5m])))", "\n            / sum by (job) (rate(cache_misses_total[5m]))", "cache"},
	}
	runs := []ruleRun{{rules, []string{"hour", "reset", "database", "cache", "six-hours", "three-days", "one-day"}}}
	for i, m := range mutations {
		if strings.Count(rules, m.from) != 1 {
			t.Fatalf("step %d: %s: %q is not once in the rules", i, m.what, m.from)
		}
		runs = append(runs, ruleRun{strings.Replace(rules, m.from, m.to, 1), []string{m.catcher}})
	}
	// Two promtool processes, each a core's work for a second or two.
	half := len(runs) / 2
	var wg sync.WaitGroup
	passed := make([][]bool, 2)
	for b, batch := range [][]ruleRun{runs[:half], runs[half:]} {
		wg.Go(func() {
			ok, out, err := runAlertTests(t, tool, batch)
			if err != nil {
				t.Errorf("promtool: %v\n%s", err, out)
				return
			}
			passed[b] = ok
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	all := append(passed[0], passed[1]...)
	if !all[0] {
		t.Errorf("the rules as they are fail their tests")
	}
	for i, m := range mutations {
		if all[i+1] {
			t.Errorf("step %d: %s, %s: the case %s passes, want a failure", i, m.alert, m.what, m.catcher)
		}
	}
}
