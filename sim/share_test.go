package sim

import (
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestQueryRoundTrip(t *testing.T) {
	for _, c := range goldenCases(t) {
		q := c.cfg.Query()
		back, err := ParseQuery(q)
		if err != nil {
			t.Fatalf("%s: ParseQuery(%s): %v", c.name, q.Encode(), err)
		}
		if !reflect.DeepEqual(back, c.cfg) {
			t.Fatalf("%s: round trip gave %+v, want %+v", c.name, back, c.cfg)
		}
	}
	c := Config{Scenario: "bad-deploy", Seed: 7, Noise: true, Minutes: 30, Actions: []Action{
		Switch(16, ControlHeavyFeature, false), Press(28, ControlRollback), Set(29, ControlTargetUtilization, 0.45),
	}}
	want := "actions=16%3Aheavy_feature%3Afalse%2C28%3Arollback%2C29%3Atarget_utilization%3A0.45&minutes=30&noise=1&scenario=bad-deploy&seed=7"
	if got := c.Query().Encode(); got != want {
		t.Errorf("Query().Encode() = %s, want %s", got, want)
	}
}

func TestParseQueryDefaults(t *testing.T) {
	c, err := ParseQuery(url.Values{"scenario": {"surge"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Config{Scenario: "surge", Noise: true}); !reflect.DeepEqual(c, want) {
		t.Errorf("defaults %+v, want %+v", c, want)
	}
}

func TestParseQueryRefusesBadInput(t *testing.T) {
	for i, tc := range []struct {
		query string
		is    error
		want  []string
	}{
		{"", ErrInvalidConfig, []string{"scenario missing", "steady, bad-deploy"}},
		{"scenario=calm", ErrInvalidConfig, []string{`scenario "calm"`}},
		{"scenario=steady&scenario=surge", ErrInvalidConfig, []string{"scenario given more than once"}},
		{"scenario=steady&seed=-1", ErrInvalidConfig, []string{`seed "-1": want an integer from 0 to 4294967295`}},
		{"scenario=steady&seed=4294967296", ErrInvalidConfig, []string{"seed", "4294967295"}},
		{"scenario=steady&noise=yes", ErrInvalidConfig, []string{`noise "yes": want 1 or 0`}},
		{"scenario=steady&minutes=x", ErrInvalidConfig, []string{`minutes "x"`, "from 1 to 10080"}},
		{"scenario=steady&minutes=99999", ErrInvalidConfig, []string{"minutes 99999", "from 1 to 10080"}},
		{"scenario=steady&actions=28", ErrInvalidAction, []string{`"28": want minute:control`}},
		{"scenario=steady&actions=x:rollback", ErrInvalidAction, []string{`field "minute"`}},
		{"scenario=steady&actions=3:reboot", ErrInvalidAction, []string{`field "control"`, `unknown control "reboot"`}},
		{"scenario=steady&actions=3:rollback:1", ErrInvalidAction, []string{`field "value"`, "no value"}},
		{"scenario=steady&actions=3:autoscaling:yes", ErrInvalidAction, []string{`field "value"`, "true or false"}},
		{"scenario=steady&actions=3:fleet_floor", ErrInvalidAction, []string{`field "value"`, "an integer from 0 to 40, got no value"}},
		{"scenario=steady&actions=3:fleet_floor:NaN", ErrInvalidAction, []string{`field "value"`}},
		{"scenario=steady&actions=3:fleet_floor:41", ErrInvalidAction, []string{"action 0", `field "value"`}},
		{"scenario=steady&actions=1:warmup,300:rollback", ErrInvalidAction, []string{"action 1", `field "minute"`, "from 0 to 119"}},
		{"scenario=steady&minutes=10&actions=10:rollback", ErrInvalidAction, []string{"from 0 to 9"}},
		{"scenario=steady&actions=" + strings.Repeat("1:warmup,", MaxQueryActions) + "1:warmup", ErrInvalidAction, []string{"at most 5000"}},
	} {
		q, _ := url.ParseQuery(tc.query)
		_, err := ParseQuery(q)
		if !errors.Is(err, tc.is) {
			t.Errorf("step %d: ParseQuery(%.80s) = %v, want %v", i, tc.query, err, tc.is)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("step %d: ParseQuery(%.80s) = %q, want it to mention %q", i, tc.query, err, w)
			}
		}
	}
}

// FuzzParseQuery: no query string panics the share-link decoder; whatever
// it accepts runs and survives a round trip.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{
		"scenario=bad-deploy&seed=7&noise=1&minutes=30&actions=16:heavy_feature:false,28:rollback",
		"scenario=surge&actions=0:target_utilization:0.45,5:cache_ttl_s:1e2",
		"scenario=steady&minutes=1",
		"scenario=cache-flush&noise=0&actions=16:shed_low_priority:0x1p-1",
		"scenario=steady&actions=,,",
		"scenario=%zz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		c, err := ParseQuery(q)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) && !errors.Is(err, ErrInvalidAction) {
				t.Fatalf("error %v wraps neither sentinel", err)
			}
			return
		}
		back, err := ParseQuery(c.Query())
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("round trip: %+v, %v; want %+v", back, err, c)
		}
		if c.Minutes == 0 || c.Minutes > 240 {
			c.Minutes = 240 // keep each run short; the length is checked above
			for i := range c.Actions {
				c.Actions[i].Minute %= 240
			}
		}
		if _, err := Run(c); err != nil {
			t.Fatalf("accepted query does not run: %v", err)
		}
	})
}

// shareVectors are the share-link vectors both codecs are tested against:
// this package's and the console's share.js (web/share_test.go).
type shareVectors struct {
	Encode []struct {
		Name  string    `json:"name"`
		Query string    `json:"query"`
		Run   vectorRun `json:"run"`
	} `json:"encode"`
	Decode []struct {
		Name  string    `json:"name"`
		Query string    `json:"query"`
		Run   vectorRun `json:"run"`
	} `json:"decode"`
	Refuse []struct {
		Name  string `json:"name"`
		Query string `json:"query"`
		Field string `json:"field"`
	} `json:"refuse"`
}

type vectorRun struct {
	Scenario string `json:"scenario"`
	Seed     uint32 `json:"seed"`
	Noise    bool   `json:"noise"`
	Minutes  int    `json:"minutes"`
	Actions  []struct {
		Minute  int     `json:"minute"`
		Control Control `json:"control"`
		Value   any     `json:"value"`
	} `json:"actions"`
}

func (v vectorRun) config(t *testing.T) Config {
	t.Helper()
	c := Config{Scenario: v.Scenario, Seed: v.Seed, Noise: v.Noise, Minutes: v.Minutes}
	for _, a := range v.Actions {
		switch x := a.Value.(type) {
		case nil:
			c.Actions = append(c.Actions, Press(a.Minute, a.Control))
		case bool:
			c.Actions = append(c.Actions, Switch(a.Minute, a.Control, x))
		case float64:
			c.Actions = append(c.Actions, Set(a.Minute, a.Control, x))
		default:
			t.Fatalf("value %v of type %T", a.Value, a.Value)
		}
	}
	return c
}

func readShareVectors(t *testing.T) shareVectors {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "share", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v shareVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// sameConfig compares configurations, telling −0 from 0 (which a link can
// carry and reflect.DeepEqual cannot see).
func sameConfig(a, b Config) bool {
	if !reflect.DeepEqual(a, b) || len(a.Actions) != len(b.Actions) {
		return false
	}
	for i := range a.Actions {
		if math.Signbit(a.Actions[i].Value) != math.Signbit(b.Actions[i].Value) {
			return false
		}
	}
	return true
}

// TestShareVectors holds the Go codec to the shared vectors: the canonical
// query of each run byte for byte, each query read back to its run, each
// refusal naming its field.
func TestShareVectors(t *testing.T) {
	v := readShareVectors(t)
	parse := func(query string) (Config, error) {
		q, err := url.ParseQuery(query)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return ParseQuery(q)
	}
	for _, c := range v.Encode {
		want := c.Run.config(t)
		if got := want.Query().Encode(); got != c.Query {
			t.Errorf("encode %q:\n got %s\nwant %s", c.Name, got, c.Query)
		}
		got, err := parse(c.Query)
		if err != nil || !sameConfig(got, want) {
			t.Errorf("encode %q: read back %+v, %v; want %+v", c.Name, got, err, want)
		}
	}
	for _, c := range v.Decode {
		got, err := parse(c.Query)
		if want := c.Run.config(t); err != nil || !sameConfig(got, want) {
			t.Errorf("decode %q: %+v, %v; want %+v", c.Name, got, err, want)
		}
	}
	for _, c := range v.Refuse {
		_, err := parse(c.Query)
		if err == nil {
			t.Errorf("refuse %q: %s accepted", c.Name, c.Query)
			continue
		}
		if got := ErrorField(err); got != c.Field {
			t.Errorf("refuse %q: field %q, want %q (%v)", c.Name, got, c.Field, err)
		}
	}
}
