package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseActionsRefusesBadInput(t *testing.T) {
	for i, tc := range []struct {
		line string
		want []string // substrings of the message
	}{
		{`{"minute": 1, "control": "fleet_floor", "value": 41}`, []string{`line 1`, `field "value"`, "an integer from 0 to 40", "41"}},
		{`{"minute": 1, "control": "fleet_floor", "value": 2.5}`, []string{`field "value"`, "an integer from 0 to 40"}},
		{`{"minute": 1, "control": "fleet_floor", "value": "3"}`, []string{`field "value"`, "an integer from 0 to 40", `"3"`}},
		{`{"minute": 1, "control": "target_utilization", "value": 0.1}`, []string{`field "value"`, "a number from 0.2 to 0.95"}},
		{`{"minute": 1, "control": "target_utilization", "value": 0.96}`, []string{"a number from 0.2 to 0.95"}},
		{`{"minute": 1, "control": "cache_ttl_s", "value": 0}`, []string{"a number from 1 to 3600"}},
		{`{"minute": 1, "control": "cache_ttl_s", "value": 1e400}`, []string{"a number from 1 to 3600"}},
		{`{"minute": 1, "control": "shed_low_priority", "value": -0.1}`, []string{"a number from 0 to 1"}},
		{`{"minute": 1, "control": "autoscaling", "value": 1}`, []string{`field "value"`, "true or false"}},
		{`{"minute": 1, "control": "heavy_feature"}`, []string{`field "value"`, "true or false", "no value"}},
		{`{"minute": 1, "control": "rollback", "value": true}`, []string{`field "value"`, "no value (it is a button)"}},
		{`{"minute": 1, "control": "warmup", "value": 0}`, []string{`field "value"`, "no value"}},
		{`{"minute": 1, "control": "reboot"}`, []string{`field "control"`, `"reboot"`, "fleet_floor, autoscaling"}},
		{`{"minute": 1, "control": 7}`, []string{`field "control"`, "want a string"}},
		{`{"minute": 1}`, []string{`field "control"`, "missing"}},
		{`{"control": "rollback"}`, []string{`field "minute"`, "missing", "integer from 0"}},
		{`{"minute": -1, "control": "rollback"}`, []string{`field "minute"`, "integer from 0"}},
		{`{"minute": 1.5, "control": "rollback"}`, []string{`field "minute"`, "integer from 0"}},
		{`{"minute": "1", "control": "rollback"}`, []string{`field "minute"`, "integer from 0"}},
		{`{"minute": 120, "control": "rollback"}`, []string{`field "minute"`, "outside the run", "from 0 to 119"}},
		{`{"minute": 1, "control": "rollback", "when": 3}`, []string{`field "when"`, "unknown field"}},
		{`{"minute": 1, "control": "rollback"} {"minute": 2}`, []string{"malformed JSON"}},
		{`{"minute": 1, "control": "rollback"`, []string{"malformed JSON"}},
		{`[1, 2]`, []string{"malformed JSON", "not a JSON object"}},
		{`null`, []string{"got null"}},
		{`"rollback"`, []string{"malformed JSON"}},
		{strings.Repeat("x", 5000), []string{"longer than 4096 bytes"}},
	} {
		_, err := ParseActions(strings.NewReader(tc.line+"\n"), 120)
		if !errors.Is(err, ErrInvalidAction) {
			t.Errorf("step %d: ParseActions(%.60s) error %v, want ErrInvalidAction", i, tc.line, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("step %d: ParseActions(%.60s) = %q, want it to mention %q", i, tc.line, err, w)
			}
		}
	}
}

func TestParseActionsReportsEveryBadLine(t *testing.T) {
	input := `{"minute": 1, "control": "fleet_floor", "value": 41}

{"minute": 2, "control": "rollback"}
{"minute": 3, "control": "nope"}
`
	_, err := ParseActions(strings.NewReader(input), 120)
	if err == nil {
		t.Fatal("bad file accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, "line 1:") || !strings.Contains(msg, "line 4:") || strings.Contains(msg, "line 3:") {
		t.Errorf("error %q should name lines 1 and 4 only", msg)
	}
	var many strings.Builder
	for range 25 {
		many.WriteString(`{"minute": 1, "control": "nope"}` + "\n")
	}
	_, err = ParseActions(strings.NewReader(many.String()), 120)
	if !strings.Contains(err.Error(), "15 more bad lines") || strings.Count(err.Error(), "\n") != 10 {
		t.Errorf("25 bad lines reported as %q; want 10 named and 15 counted", err)
	}
}

func TestParseActionsSortsByMinuteStably(t *testing.T) {
	input := `{"minute": 9, "control": "fleet_floor", "value": 12}
{"minute": 2, "control": "fleet_floor", "value": 20}
{"minute": 9, "control": "fleet_floor", "value": 11}
{"minute": 2, "control": "warmup"}
`
	got, err := ParseActions(strings.NewReader(input), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Action{Set(2, ControlFleetFloor, 20), Press(2, ControlWarmup), Set(9, ControlFleetFloor, 12), Set(9, ControlFleetFloor, 11)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseActions = %v, want %v", got, want)
	}
}

func TestActionsRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/actions/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no action files in testdata/actions")
	}
	for _, name := range files {
		raw, _ := os.ReadFile(name)
		actions, err := ParseActions(bytes.NewReader(raw), 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var buf bytes.Buffer
		if err := WriteActions(&buf, actions); err != nil {
			t.Fatal(err)
		}
		again, err := ParseActions(&buf, 0)
		if err != nil || !reflect.DeepEqual(again, actions) {
			t.Fatalf("%s: round trip gave %v, %v; want %v", name, again, err, actions)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for i, tc := range []struct {
		cfg  Config
		is   error
		want string
	}{
		{Config{}, ErrInvalidConfig, `scenario "": want one of steady, bad-deploy, surge, cache-flush`},
		{Config{Scenario: "Steady"}, ErrInvalidConfig, "want one of"},
		{Config{Scenario: "steady", Minutes: -1}, ErrInvalidConfig, "minutes -1: want an integer from 1 to 10080"},
		{Config{Scenario: "steady", Minutes: MaxMinutes + 1}, ErrInvalidConfig, "from 1 to 10080"},
		{Config{Scenario: "steady", Minutes: 10, Actions: []Action{Press(10, ControlRollback)}}, ErrInvalidAction, "from 0 to 9"},
		{Config{Scenario: "steady", Actions: []Action{Press(119, ControlRollback), Set(3, ControlFleetFloor, 50)}}, ErrInvalidAction, `action 1: field "value"`},
		{Config{Scenario: "steady", Actions: []Action{{Minute: 1, Control: "boom"}}}, ErrInvalidAction, "unknown control"},
		{Config{Scenario: "steady", Actions: make([]Action, MaxActions+1)}, ErrInvalidAction, "at most 100000"},
	} {
		frames, err := Run(tc.cfg)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) || frames != nil {
			t.Errorf("step %d: Run(%.80v) = %d frames, %v; want %v mentioning %q", i, tc.cfg, len(frames), err, tc.is, tc.want)
		}
	}
	if _, err := Run(Config{Scenario: "steady", Minutes: MaxMinutes}); err != nil {
		t.Errorf("a week-long run: %v", err)
	}
}

// FuzzParseActions feeds arbitrary bytes to the action-file parser. It must
// never panic; what it accepts must be valid, must survive a round trip,
// and must run.
func FuzzParseActions(f *testing.F) {
	files, _ := filepath.Glob("testdata/actions/*.jsonl")
	for _, name := range files {
		raw, _ := os.ReadFile(name)
		f.Add(raw)
	}
	for _, s := range []string{
		`{"minute": 1, "control": "fleet_floor", "value": 41}`,
		`{"minute": 1e2, "control": "cache_ttl_s", "value": 1E3}`,
		`{"minute": 0, "control": "autoscaling", "value": null}`,
		`{"minute": 0, "control": "rollback", "value": null}`,
		"{\"minute\": 0, \"control\": \"warmup\"}\r\n\n",
		`{"minute": 3, "control": "heavy_feature", "value": false, "minute": 4}`,
		`{"minute": null, "control": "rollback"}`,
		`{"minute": 1e-400, "control": "fleet_floor", "value": 1.0000000000000001}`,
		"\xff\xfe{",
		`{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const minutes = 120
		actions, err := ParseActions(bytes.NewReader(data), minutes)
		if err != nil {
			if !errors.Is(err, ErrInvalidAction) {
				t.Fatalf("error %v does not wrap ErrInvalidAction", err)
			}
			return
		}
		for i, a := range actions {
			if err := a.Validate(minutes); err != nil {
				t.Fatalf("accepted action %d is invalid: %v", i, err)
			}
		}
		var buf bytes.Buffer
		if err := WriteActions(&buf, actions); err != nil {
			t.Fatal(err)
		}
		again, err := ParseActions(&buf, minutes)
		if err != nil || !reflect.DeepEqual(again, actions) {
			t.Fatalf("round trip: %v, %v; want %v", again, err, actions)
		}
		if _, err := Run(Config{Scenario: "cache-flush", Seed: 1, Noise: true, Actions: actions}); err != nil {
			t.Fatalf("accepted actions do not run: %v", err)
		}
	})
}

// TestActionStrictNumbers: an action's minute and an integer control's
// value are read exactly: null, 1e-400 and 1.0000000000000001 are not
// whole numbers (before, null and 1e-400 ran at minute 0 and set the
// floor to 0), and a key given twice is refused rather than the last one
// winning.
func TestActionStrictNumbers(t *testing.T) {
	for i, tc := range []struct {
		line, field string
	}{
		{`{"minute": null, "control": "rollback"}`, "minute"},
		{`{"minute": 1e-400, "control": "rollback"}`, "minute"},
		{`{"minute": 1.0000000000000001, "control": "rollback"}`, "minute"},
		{`{"minute": 3, "control": "fleet_floor", "value": 1e-400}`, "value"},
		{`{"minute": 3, "control": "fleet_floor", "value": 2.0000000000000001}`, "value"},
		{`{"minute": 3, "control": "fleet_floor", "value": null}`, "value"},
		{`{"minute": 3, "control": "rollback", "minute": 4}`, "minute"},
		{`{"minute": 3, "control": "heavy_feature", "value": false, "value": true}`, "value"},
		{`{"minute": 3, "control": "rollback", "\u006dinute": 4}`, "minute"},
		{`{"minute": 3, "control": "rollback", "value": {"a": "}\"", "b": [1, {"c": 2}]}, "minute": 4}`, "minute"},
	} {
		var a Action
		err := a.UnmarshalJSON([]byte(tc.line))
		var ae *ActionError
		if !errors.As(err, &ae) || ae.Field != tc.field {
			t.Errorf("step %d: %s: %v (%+v); want an error on %q", i, tc.line, err, a, tc.field)
		}
	}
	for i, tc := range []struct {
		line string
		want Action
	}{
		{`{"minute": 0, "control": "rollback"}`, Press(0, ControlRollback)},
		{`{"minute": 1e1, "control": "fleet_floor", "value": 0}`, Set(10, ControlFleetFloor, 0)},
		{`{"minute": 2, "control": "fleet_floor", "value": 2.50e1}`, Set(2, ControlFleetFloor, 25)},
		{`{"minute": 2, "control": "shed_low_priority", "value": 1e-400}`, Set(2, ControlShedLowPriority, 0)},
	} {
		var a Action
		if err := a.UnmarshalJSON([]byte(tc.line)); err != nil || a != tc.want {
			t.Errorf("step %d: %s = %+v, %v; want %+v", i, tc.line, a, err, tc.want)
		}
	}
}

// FuzzTopLevelKeys: the byte scan that counts an object's keys agrees with
// encoding/json's tokens on every object encoding/json reads.
func FuzzTopLevelKeys(f *testing.F) {
	for _, s := range []string{`{}`, `{"a": 1}`, `{"a": 1, "a": 2}`, `{"a\"b": "}", "c": [{"d": 1}, "e,"]}`, `{"\u0061": {"b": {"c": []}}, "x": "\\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil || m == nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.Token()
		want := 0
		for dec.More() {
			dec.Token()
			var skip json.RawMessage
			dec.Decode(&skip)
			want++
		}
		if got := topLevelKeys(data); got != want {
			t.Fatalf("topLevelKeys(%q) = %d, encoding/json reads %d keys", data, got, want)
		}
	})
}
