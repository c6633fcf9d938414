package drill

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const (
	dashboardFile = "../docs/grafana-drill.json"
	// The schema of Grafana's dashboard model the quota's dashboard is
	// held to as well.
	dashboardSchema = "../quota/coordinator/replica/testdata/grafana-dashboard.schema.json"
)

var (
	// metricSelectorRe is a metric with its matchers, as every query of
	// the dashboard names one.
	metricSelectorRe = regexp.MustCompile(`([a-z_]+)\{`)
	byRe             = regexp.MustCompile(`by \(([a-z_, ]+)\)`)
)

// TestDashboard: docs/grafana-drill.json validates against the schema of
// Grafana's dashboard model, and every query in it — panels, annotations,
// variables — names metrics the drill exposes, grouped by labels they
// have.
func TestDashboard(t *testing.T) {
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(dashboardSchema)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}

	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Annotations struct{ List []struct{ Expr string } }
		Templating  struct {
			List []struct{ Definition string }
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, a := range d.Annotations.List {
		exprs = append(exprs, a.Expr)
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			exprs = append(exprs, strings.Replace(v.Definition, "label_values(drill_info,", "drill_info{", 1))
		}
	}
	have := exposed(t)
	checked := 0
	for _, e := range exprs {
		names := metricSelectorRe.FindAllStringSubmatch(e, -1)
		if len(names) == 0 && e != "vector(0.001)" {
			t.Errorf("query %q names no metric", e)
		}
		for _, n := range names {
			labels, ok := have[n[1]]
			if !ok {
				t.Errorf("query %q: %s is not exposed", e, n[1])
				continue
			}
			checked++
			for _, by := range byRe.FindAllStringSubmatch(e, -1) {
				for _, l := range strings.Split(by[1], ",") {
					if l = strings.TrimSpace(l); !slices.Contains(labels, l) && l != "job" {
						t.Errorf("query %q: grouped by %q, which %s lacks", e, l, n[1])
					}
				}
			}
		}
	}
	if checked < 15 {
		t.Errorf("%d metrics checked in %d queries: the dashboard was not read", checked, len(exprs))
	}
}
