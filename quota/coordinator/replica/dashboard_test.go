package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/afloat/afloat/quota/agent"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/internal/ops"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/remote"
)

const (
	dashboardFile = "../../../docs/grafana-quota.json"
	schemaFile    = "testdata/grafana-dashboard.schema.json"
	quotaDoc      = "../../../docs/quota/operations.md"
)

// exposed scrapes a region agent and a leading coordinator (on an
// in-memory ledger: no network but loopback, no etcd), once the agent
// holds its leases (so that the renewal histogram has a series), and
// returns every afloat_quota_ series name they expose — a histogram as
// its _bucket, _sum and _count — with its label names (the scraper's job
// and instance included). Both name both tenants (--metrics-tenants), so
// that the tenants' own series are among them.
func exposed(t *testing.T) map[string][]string {
	t.Helper()
	cfg := opstest.MustConfig(t, opstest.ConfigFile("metrics.yaml"))
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: cfg.QuotaTenants()}, coordinator.NewMemLedger())
	opstest.Must(t, err)
	var wg sync.WaitGroup
	wg.Go(func() { srv.Run(ctx) }) //nolint:errcheck // ends with ctx
	m := newCoordMetrics(func() *coordinator.Server { return srv }, []string{"acme", "beta"})
	m.txn.WithLabelValues("ok") // the in-memory ledger is not metered
	api, err := remote.Handler(remote.HandlerConfig{Tokens: cfg.Tokens(), Lead: func() (remote.Backend, string) { return srv, "" }})
	opstest.Must(t, err)
	cs := httptest.NewServer(m.handler(api, coordReady(func() *coordinator.Server { return srv }, func() string { return "" }, "", func() bool { return false })))
	// The agent stops first (its long poll would hold cs.Close), giving
	// its leases back to the server, which stops next.
	defer cs.Close()
	defer wg.Wait()
	defer cancel()

	ready := make(chan string, 1)
	a, err := agent.New(agent.Options{Config: cfg, Name: "eu", Coordinators: []string{cs.URL}, Listen: "127.0.0.1:0",
		Logger: opstest.QuietLog(), Ready: func(addr string) { ready <- addr }, MetricsTenants: []string{"acme", "beta"}})
	opstest.Must(t, err)
	ran := make(chan error, 1)
	wg.Go(func() { ran <- a.Run(ctx) })
	var rs string
	select {
	case addr := <-ready:
		rs = "http://" + addr
	case err := <-ran:
		t.Fatalf("the agent ended before it served: %v", err)
	}
	opstest.WaitFor(t, "the agent's leases", func() bool { code, _ := opstest.Readyz(t, rs); return code == 200 })

	out := map[string][]string{}
	for _, base := range []string{rs, cs.URL} {
		for name, f := range opstest.Scrape(t, base) {
			if !strings.HasPrefix(name, ops.MetricPrefix) {
				continue
			}
			labels := []string{"job", "instance"}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if !slices.Contains(labels, l.GetName()) {
						labels = append(labels, l.GetName())
					}
				}
			}
			if f.GetType().String() == "HISTOGRAM" {
				out[name+"_bucket"] = append(slices.Clone(labels), "le")
				out[name+"_sum"] = labels
				out[name+"_count"] = labels
			} else {
				out[name] = labels
			}
		}
	}
	return out
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func loadJSON(t *testing.T, path string) any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// TestDashboardSchema: docs/grafana-quota.json validates against the
// schema of Grafana's dashboard model in testdata — and the schema
// catches what it must: each mutation of the dashboard below is refused.
func TestDashboardSchema(t *testing.T) {
	sch := compileSchema(t)
	dash := loadJSON(t, dashboardFile)
	if err := sch.Validate(dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	firstQuery := func(d map[string]any) map[string]any {
		for _, p := range d["panels"].([]any) {
			if p := p.(map[string]any); p["type"] != "row" {
				return p
			}
		}
		return nil
	}
	for i, tc := range []struct {
		what   string
		mutate func(d map[string]any)
	}{
		{"no title", func(d map[string]any) { delete(d, "title") }},
		{"no schemaVersion", func(d map[string]any) { delete(d, "schemaVersion") }},
		{"no panels", func(d map[string]any) { d["panels"] = []any{} }},
		{"a panel without gridPos", func(d map[string]any) { delete(firstQuery(d), "gridPos") }},
		{"a panel 25 wide", func(d map[string]any) { firstQuery(d)["gridPos"].(map[string]any)["w"] = 25 }},
		{"a panel without targets", func(d map[string]any) { delete(firstQuery(d), "targets") }},
		{"a target without expr", func(d map[string]any) {
			delete(firstQuery(d)["targets"].([]any)[0].(map[string]any), "expr")
		}},
		{"an empty expr", func(d map[string]any) { firstQuery(d)["targets"].([]any)[0].(map[string]any)["expr"] = "" }},
		{"an unknown panel type", func(d map[string]any) { firstQuery(d)["type"] = "graphh" }},
		{"a datasource not Prometheus", func(d map[string]any) { firstQuery(d)["datasource"].(map[string]any)["type"] = "loki" }},
	} {
		var d map[string]any
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		tc.mutate(d)
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(mustJSON(t, d)))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); err == nil {
			t.Errorf("step %d: %s: valid, want refused", i, tc.what)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dashboard is the part of the dashboard the checks below read.
type dashboard struct {
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID      int                      `json:"id"`
		Type    string                   `json:"type"`
		Title   string                   `json:"title"`
		GridPos struct{ H, W, X, Y int } `json:"gridPos"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

var (
	metricRe  = regexp.MustCompile(`\bafloat_[a-z0-9_]+`)
	matcherRe = regexp.MustCompile(`(afloat_[a-z0-9_]+)\s*\{([^}]*)\}`)
	labelRe   = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)`)
	byRe      = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	varRe     = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)
)

// TestDashboardQueriesNameExposedMetrics: every query of the dashboard
// (panels and template variables) names only metrics /metrics exposes,
// matches and groups only by labels those metrics have, and uses only
// variables the dashboard defines; every metric is on a panel; panel ids
// are unique, and no panels overlap on Grafana's 24-column grid. And the
// check catches each planted mistake below.
func TestDashboardQueriesNameExposedMetrics(t *testing.T) {
	have := exposed(t)
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkDashboard(t, raw, have) {
		t.Error(p)
	}
	for i, tc := range []struct{ what, from, to, want string }{
		{"a metric not exposed", "afloat_quota_region_tenant_balance_tokens{", "afloat_quota_region_tenant_balances_tokens{", "is not exposed"},
		{"a tenant on a sum over the tenants", `afloat_quota_region_admitted_tokens_total{region`, `afloat_quota_region_admitted_tokens_total{tenant=~\"$tenant\", region`, `has no label "tenant"`},
		{"a label the metric lacks", `afloat_quota_coordinator_leader"`, `afloat_quota_coordinator_leader{tenant=\"x\"}"`, `has no label "tenant"`},
		{"grouping by a label none has", "sum by (le) (rate(afloat_quota_coordinator_ledger_txn_ops_bucket", "sum by (le, tenant) (rate(afloat_quota_coordinator_ledger_txn_ops_bucket", `grouped by "tenant"`},
		{"an undefined variable", `region=~\"$region\", result=\"granted\"`, `region=~\"$regions\", result=\"granted\"`, "variable $regions"},
		{"a metric on no panel", "afloat_quota_region_returns_total", "afloat_quota_region_grants_total", "afloat_quota_region_returns_total is on no panel"},
		{"overlapping panels", `"x": 12,
        "y": 1`, `"x": 6,
        "y": 1`, "overlap"},
		{"a panel id twice", `"id": 3,`, `"id": 2,`, "used twice"},
		{"unbalanced brackets", "(afloat_quota_coordinator_tenant_burst_tokens{", "(afloat_quota_coordinator_tenant_burst_tokens{{", "unbalanced"},
	} {
		if !strings.Contains(string(raw), tc.from) {
			t.Fatalf("step %d: %s: %q not in the dashboard", i, tc.what, tc.from)
		}
		bad := strings.Replace(string(raw), tc.from, tc.to, 1)
		found := false
		for _, p := range checkDashboard(t, []byte(bad), have) {
			found = found || strings.Contains(p, tc.want)
		}
		if !found {
			t.Errorf("step %d: %s: not caught (want a problem naming %q)", i, tc.what, tc.want)
		}
	}
}

// checkDashboard lists what is wrong with the dashboard raw, given the
// series have exposes.
func checkDashboard(t *testing.T, raw []byte, have map[string][]string) []string {
	t.Helper()
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	var exprs []string
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if q, ok := v.Query.(map[string]any); ok {
			exprs = append(exprs, q["query"].(string))
		}
	}
	ids := map[int]bool{}
	used := map[string]bool{}
	for i, p := range d.Panels {
		if ids[p.ID] {
			bad("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		for _, q := range d.Panels[:i] {
			a, b := p.GridPos, q.GridPos
			if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
				bad("panels %q and %q overlap", q.Title, p.Title)
			}
		}
		if p.GridPos.X+p.GridPos.W > 24 {
			bad("panel %q: x %d + w %d past the 24 columns", p.Title, p.GridPos.X, p.GridPos.W)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, e := range exprs {
		names := metricRe.FindAllString(e, -1)
		if len(names) == 0 {
			bad("query %q names no afloat metric", e)
		}
		labels := map[string]bool{}
		for _, n := range names {
			used[n] = true
			ls, ok := have[n]
			if !ok {
				bad("query %q: metric %s is not exposed", e, n)
			}
			for _, l := range ls {
				labels[l] = true
			}
		}
		for _, m := range matcherRe.FindAllStringSubmatch(e, -1) {
			for _, l := range labelRe.FindAllStringSubmatch(m[2], -1) {
				if !slices.Contains(have[m[1]], l[1]) {
					bad("query %q: %s has no label %q", e, m[1], l[1])
				}
			}
		}
		for _, m := range byRe.FindAllStringSubmatch(e, -1) {
			for _, l := range strings.Split(m[1], ",") {
				if l = strings.TrimSpace(l); l != "" && !labels[l] {
					bad("query %q: grouped by %q, a label none of its metrics has", e, l)
				}
			}
		}
		for _, v := range varRe.FindAllStringSubmatch(e, -1) {
			if !vars[v[1]] {
				bad("query %q: variable $%s is not defined", e, v[1])
			}
		}
		if strings.Count(e, "(") != strings.Count(e, ")") || strings.Count(e, "{") != strings.Count(e, "}") ||
			strings.Count(e, "[") != strings.Count(e, "]") {
			bad("query %q: unbalanced brackets", e)
		}
	}
	// Every quota metric is on the dashboard (a histogram by any of its series).
	for n := range have {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")
		if !used[n] && !used[base+"_bucket"] && !used[base+"_sum"] && !used[base+"_count"] {
			bad("metric %s is on no panel", n)
		}
	}
	return problems
}

// TestMetricsDocumented: docs/quota/operations.md's table lists every metric
// the processes expose, and no other.
func TestMetricsDocumented(t *testing.T) {
	raw, err := os.ReadFile(quotaDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "| `afloat_quota_") {
			doc[metricRe.FindString(line)] = true
		}
	}
	have := map[string]bool{}
	for n := range exposed(t) {
		if strings.HasSuffix(n, "_sum") || strings.HasSuffix(n, "_count") {
			continue
		}
		have[strings.TrimSuffix(n, "_bucket")] = true
	}
	for n := range have {
		if !doc[n] {
			t.Errorf("%s is exposed but not in %s's table", n, quotaDoc)
		}
	}
	for n := range doc {
		if !have[n] {
			t.Errorf("%s is in %s's table but not exposed", n, quotaDoc)
		}
	}
}
