package web

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/afloat/afloat/overload"
	"github.com/afloat/afloat/overload/live"
	"github.com/afloat/afloat/sim"
	"github.com/afloat/afloat/sim/bots"
)

var languages = []string{"en", "cy", "tl"}

func catalogue(t *testing.T, lang string) map[string]string {
	t.Helper()
	raw, err := fs.ReadFile(static, "static/i18n/"+lang+".json")
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]string
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%s.json: %v", lang, err)
	}
	return c
}

// usedKeys collects every message key the page can ask for: the static
// HTML's data-i18n attributes, the scripts' t("…") calls, and the families
// the scripts build from the model's names (scenarios, controls, formulas,
// constants, sources) and from their own tables (dashboard, charts).
func usedKeys(t *testing.T) []string {
	t.Helper()
	keys := map[string]bool{}
	html, _ := fs.ReadFile(static, "static/index.html")
	for _, m := range regexp.MustCompile(`data-i18n="([^"]+)"`).FindAllSubmatch(html, -1) {
		keys[string(m[1])] = true
	}
	for _, m := range regexp.MustCompile(`data-i18n-attr="([^"]+)"`).FindAllSubmatch(html, -1) {
		for _, pair := range strings.Split(string(m[1]), ";") {
			_, key, _ := strings.Cut(pair, ":")
			keys[strings.TrimSpace(key)] = true
		}
	}
	scripts, _ := fs.Glob(static, "static/js/*.js")
	call := regexp.MustCompile(`(?:^|[^\w.])tn?\("([^"]+)"`)
	ternary := regexp.MustCompile(`t\([^()"]*\? "([^"]+)" : "([^"]+)"\)`)
	for _, name := range scripts {
		src, _ := fs.ReadFile(static, name)
		for _, m := range call.FindAllSubmatch(src, -1) {
			keys[string(m[1])] = true
		}
		for _, m := range ternary.FindAllSubmatch(src, -1) {
			keys[string(m[1])] = true
			keys[string(m[2])] = true
		}
	}
	// The quota lab passes some keys around before it calls t (an error
	// to show, the explanation of an action): every "quota.…" string in its
	// script is a key.
	// So does its comparison with Gubernator (quotapeers.js), which also
	// names each system measured by its id in the embedded result.
	for _, name := range []string{"static/js/quota.js", "static/js/quotapeers.js"} {
		quotaJS, _ := fs.ReadFile(static, name)
		for _, m := range regexp.MustCompile(`"(quota\.[a-z0-9_.-]*[a-z0-9_])"`).FindAllSubmatch(quotaJS, -1) {
			keys[string(m[1])] = true
		}
	}
	for _, s := range quotaPeersResult(t).Systems {
		keys["quota.peers.sys."+s.ID] = true
	}
	for _, sc := range sim.Scenarios() {
		keys["scenario."+sc.Name+".title"] = true
		keys["scenario."+sc.Name+".briefing"] = true
	}
	for _, c := range sim.ControlSpecs() {
		keys["control."+string(c.Control)+".label"] = true
		keys["control."+string(c.Control)+".help"] = true
		if c.Kind == sim.KindPress {
			keys["control."+string(c.Control)+".press"] = true
			keys["control."+string(c.Control)+".running"] = true
		}
	}
	for _, id := range sim.FormulaIDs() {
		keys["formula."+id] = true
	}
	for _, c := range sim.Constants() {
		keys["constant."+c.ID] = true
	}
	for _, s := range sim.Sources() {
		keys[fmt.Sprintf("source.%d", s.N)] = true
	}
	for id := range dashboardRules {
		keys["metric."+id] = true
	}
	keys["metric.deploy"] = true // the realistic mode's tile in place of the bad build's
	for key := range sim.FormulaTexts() {
		keys["relation."+key] = true
		keys["values."+key] = true
	}
	keys["formula.p99.caveat"] = true
	for _, sc := range sim.ScenarioNames() {
		for _, step := range bots.RunbookSteps(sc) {
			keys[step] = true
		}
	}
	for _, d := range []string{"training", "realistic"} {
		keys["difficulty."+d] = true
		keys["difficulty."+d+".help"] = true
	}
	for n := range 4 {
		keys[fmt.Sprintf("grade.%d", n)] = true
	}
	for _, part := range []string{"budget", "errors", "shed", "degraded", "stale", "money", "total"} {
		keys["score.part."+part] = true
	}
	for _, kind := range []string{"moved", "removed", "added"} {
		keys["coach."+kind] = true
		keys["coach."+kind+"_budget"] = true
	}
	for _, why := range []string{bots.WhyDeploy, bots.WhyErrors, bots.WhyPage, bots.WhyDatabase, bots.WhyRequests,
		bots.WhyEarlier, bots.WhyLater, bots.WhyUnneeded, bots.WhyExpert} {
		keys["coach.why."+why] = true
	}
	for _, s := range []string{"bad_build", "paged", "burn_1h", "cache_hit", "cache_warm", "db", "requests", "fleet_cost"} {
		keys["debrief.series."+s] = true
	}
	charts := map[string][]string{
		"requests": {"requests_per_s", "admitted_per_s"},
		"latency":  {"p99_ms", "error_rate"},
		"burn":     {"burn_1h", "burn_5m", "budget_remaining"},
		"cache":    {"cache_hit", "db_utilization"},
		"fleet":    {"serving", "booting"},
		"cost":     {"fleet_cost_per_h", "cost_so_far"},
	}
	for id, series := range charts {
		keys["chart."+id+".title"] = true
		for _, s := range series {
			keys["chart."+id+"."+s] = true
		}
	}
	for _, id := range []string{"budget_left", "worst_burn_1h", "worst_burn", "minutes_over_slo", "minutes_p99_over_1s",
		"paged", "total_cost", "mean_age", "shed", "no_recommendations", "bad_build"} {
		keys["debrief."+id] = true
	}
	// The overload lab names its profiles, games, cells, series and checks
	// from the model's and the live harness's names.
	for _, p := range overload.ProfileNames() {
		keys["lab.profile_name."+p], keys["lab.intro."+p], keys["lab.lesson."+p] = true, true, true
	}
	for _, g := range overload.GameNames {
		keys["lab.game."+g], keys["lab.games.rules."+g] = true, true
	}
	for _, family := range []struct {
		prefix string
		names  []string
	}{
		{"lab.cell.", []string{"done", "queued", "away"}},
		{"lab.series.", []string{"first_tries", "retries", "responses", "late", "timeouts", "wasted", "rejected", "refused", "other_errors", "concurrency"}},
		{"lab.check.", []string{"cpu_share", "p50_vs_work", "capacity_vs_work", "goodput", "calm", "sent", "drift"}},
		{"lab.slowdown.", []string{"linear_is", "nonlinear_is"}},
		{"lab.hypothesis.row.", []string{"compared", "linear", "nonlinear"}},
		{"lab.live.", []string{"done", "too_busy", "stopped_early", "unreliable"}},
		{"lab.live.mode.", live.Modes},
		{"lab.live.chart.", []string{"goodput.axis", "p99.axis"}},
	} {
		for _, n := range family.names {
			keys[family.prefix+n] = true
		}
	}
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var placeholder = regexp.MustCompile(`\{\w+\}`)

// TestCataloguesAreComplete fails when any language lacks a key another has
// or the page uses, when a message is empty, or when a translation drops or
// invents a {placeholder}.
func TestCataloguesAreComplete(t *testing.T) {
	en := catalogue(t, "en")
	for _, key := range usedKeys(t) {
		if _, ok := en[key]; !ok {
			t.Errorf("en: the page uses %q, which the catalogue lacks", key)
		}
	}
	for _, lang := range languages {
		c := catalogue(t, lang)
		for key, msg := range en {
			tr, ok := c[key]
			switch {
			case !ok:
				t.Errorf("%s: missing key %q", lang, key)
			case strings.TrimSpace(tr) == "":
				t.Errorf("%s: empty message for %q", lang, key)
			default:
				// A plural message may name a placeholder in some forms only
				// (Welsh "unwaith", once): the sets must match, not the counts.
				want, got := placeholder.FindAllString(msg, -1), placeholder.FindAllString(tr, -1)
				slices.Sort(want)
				slices.Sort(got)
				want, got = slices.Compact(want), slices.Compact(got)
				if !slices.Equal(want, got) {
					t.Errorf("%s: %q has placeholders %v, English has %v", lang, key, got, want)
				}
			}
		}
		for key := range c {
			if _, ok := en[key]; !ok {
				t.Errorf("%s: key %q is not in English", lang, key)
			}
		}
	}
}

// TestEnglishMatchesTheModel keeps the English briefings and control help
// the same as the model's own texts, so the two cannot drift apart.
func TestEnglishMatchesTheModel(t *testing.T) {
	en := catalogue(t, "en")
	for _, sc := range sim.Scenarios() {
		if got := en["scenario."+sc.Name+".briefing"]; got != sc.Briefing {
			t.Errorf("%s briefing:\n catalogue %q\n model     %q", sc.Name, got, sc.Briefing)
		}
		if got := en["scenario."+sc.Name+".title"]; got != sc.Title {
			t.Errorf("%s title: catalogue %q, model %q", sc.Name, got, sc.Title)
		}
	}
	for _, c := range sim.ControlSpecs() {
		if got := en["control."+string(c.Control)+".help"]; got != c.Help {
			t.Errorf("%s help:\n catalogue %q\n model     %q", c.Control, got, c.Help)
		}
		if got := en["control."+string(c.Control)+".label"]; got != c.Label {
			t.Errorf("%s label: catalogue %q, model %q", c.Control, got, c.Label)
		}
	}
}

// TestEnglishFormulasMatchTheModel keeps the English relations and worked
// values of the model page the model's own (sim.FormulaTexts), so that
// the Welsh and Tagalog ones translate what the model computes.
func TestEnglishFormulasMatchTheModel(t *testing.T) {
	en := catalogue(t, "en")
	for key, text := range sim.FormulaTexts() {
		if got := en["relation."+key]; got != text.Relation {
			t.Errorf("relation.%s:\n catalogue %q\n model     %q", key, got, text.Relation)
		}
		if got := en["values."+key]; got != text.Values {
			t.Errorf("values.%s:\n catalogue %q\n model     %q", key, got, text.Values)
		}
	}
}

var pluralForm = regexp.MustCompile(`\[([^\]]*)\]`)

// TestPluralMessages: a message with plural forms ("[one] … [other] …",
// read by i18n.js's tn with Intl.PluralRules) is plural in every language,
// starts with a form, names only CLDR categories or exact counts ("=1"),
// and always has "other", the fallback.
func TestPluralMessages(t *testing.T) {
	en := catalogue(t, "en")
	categories := map[string]bool{"zero": true, "one": true, "two": true, "few": true, "many": true, "other": true}
	n := 0
	for _, lang := range languages {
		c := catalogue(t, lang)
		for key, msg := range c {
			enPlural := strings.HasPrefix(en[key], "[")
			if strings.HasPrefix(msg, "[") != enPlural {
				t.Errorf("%s: %q is plural in one language only: %q", lang, key, msg)
				continue
			}
			if !enPlural {
				continue
			}
			n++
			hasOther := false
			for _, m := range pluralForm.FindAllStringSubmatch(msg, -1) {
				name := m[1]
				ok := categories[name] || regexp.MustCompile(`^=\d+$`).MatchString(name)
				if !ok {
					t.Errorf("%s: %q has a form %q, not a plural category", lang, key, name)
				}
				hasOther = hasOther || name == "other"
			}
			if !hasOther {
				t.Errorf("%s: %q has no [other] form: %q", lang, key, msg)
			}
		}
	}
	if n < 3*8 {
		t.Errorf("only %d plural messages over the three languages", n)
	}
}

// TestPageIDsAreUnique: no id is given twice in the page — a label, an
// aria-labelledby or getElementById finds the first only, so the second
// element would go unnamed (the game's heading and the lab's games once
// shared "game-h").
func TestPageIDsAreUnique(t *testing.T) {
	html, err := fs.ReadFile(static, "static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, m := range regexp.MustCompile(`\sid="([^"]+)"`).FindAllStringSubmatch(string(html), -1) {
		seen[m[1]]++
	}
	if len(seen) < 50 {
		t.Fatalf("%d ids in index.html: the page was not read", len(seen))
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("id %q is given %d times in index.html", id, n)
		}
	}
}
