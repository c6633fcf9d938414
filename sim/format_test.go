package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestWriteScenariosAndControls: the scenario list, as a table and as
// JSON lines, holds every scenario with the fields named; another format
// is refused with nothing written; every control is described with its
// range.
func TestWriteScenariosAndControls(t *testing.T) {
	var b bytes.Buffer
	if err := WriteScenarios(&b, FormatTable); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NAME  ", "steady", "bad-deploy", "surge", "cache-flush", "09:10", "8 min"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := WriteScenarios(&b, FormatJSONL); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != len(Scenarios()) {
		t.Fatalf("%d lines for %d scenarios", len(lines), len(Scenarios()))
	}
	for _, line := range lines {
		var sc map[string]any
		if err := json.Unmarshal([]byte(line), &sc); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"name", "title", "briefing", "start", "minutes", "boot_delay_minutes", "budget_remaining"} {
			if _, ok := sc[k]; !ok {
				t.Errorf("%s lacks %q", line, k)
			}
		}
	}
	b.Reset()
	if err := WriteScenarios(&b, FormatCSV); !errors.Is(err, ErrInvalidConfig) || ErrorField(err) != "format" || b.Len() != 0 {
		t.Errorf("csv: %v, %d bytes written; want the format refused and nothing written", err, b.Len())
	}
	b.Reset()
	if err := WriteControls(&b); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "\n"); n != len(ControlSpecs()) {
		t.Errorf("%d lines for %d controls", n, len(ControlSpecs()))
	}
	for _, want := range []string{"fleet_floor", "integer 0–40", "rollback", "press: no value", "true or false"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("controls lack %q:\n%s", want, b.String())
		}
	}
}
