package conventions

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// month is an English month's name or its usual abbreviation, capitalised
// as a date writes it (lowercase "may" is a verb, not a date).
const month = `(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)`

// datePattern matches a date as a run log writes one: 2026-12-07 (or
// 2026/12/07), Dec 7, 7 December, December 2026.
var datePattern = regexp.MustCompile(`\b20\d\d[-/]\d\d[-/]\d\d\b` +
	`|\b` + month + `\.?\s+\d{1,2}(?:st|nd|rd|th)?\b` +
	`|\b\d{1,2}(?:st|nd|rd|th)?\s+` + month + `\b` +
	`|\b` + month + `,?\s+20\d\d\b`)

// datesOutsideTables returns, as "line N: date", every date in text
// outside a markdown table row (a line starting with |). A fenced code
// block is outside every table, whatever its lines start with.
func datesOutsideTables(text string) []string {
	var found []string
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if !fenced && strings.HasPrefix(line, "|") {
			continue
		}
		for _, d := range datePattern.FindAllString(line, -1) {
			found = append(found, fmt.Sprintf("line %d: %s", i+1, d))
		}
	}
	return found
}

// TestBenchmarksDatesOnlyInTables: docs/benchmarks.md is a reference, not
// a run log. A figure's date sits in its claim's table, beside the
// machine and the commit measured; the prose says what is true now and
// the command that shows it, and git keeps the history (STYLE.md, "Docs
// as a diary"). The check flags planted dates in prose, in a code block
// and in a table's neighbour, and leaves a table row's alone.
func TestBenchmarksDatesOnlyInTables(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	if found := datesOutsideTables(string(raw)); len(found) > 0 {
		t.Errorf("docs/benchmarks.md has %d dates outside its tables (move each into its claim's table, or leave it to git and name the commit):\n\t%s",
			len(found), strings.Join(found, "\n\t"))
	}

	for step, c := range []struct {
		text string
		want int
	}{
		{"| run | AMD, 2026-12-07 02:53 UTC, at c84a570 | 1.2 ms |", 0},
		{"| when |\n|---|\n| Dec 7, 7 December, December 2026 |", 0},
		{"AMD, 2026-12-07 02:53–02:57 UTC, measured at c84a570:", 1},
		{"The run before (Dec 7) and the one of 6 December 2026.", 2},
		{"on the 3rd March, again in March 2026, then 2026/12/02", 3},
		{"```sh\n| grep 2026-12-02 # a pipe in a code block is no table\n```", 1},
		{"| a | b |\nmeasured on 2026-11-30\n| c | d |", 1},
		{"a p99 of 12 ms in 10 runs at 2026 tenants; main at d0828e8; may 10 wait", 0},
	} {
		if got := datesOutsideTables(c.text); len(got) != c.want {
			t.Errorf("step %d: datesOutsideTables(%q) = %q, want %d dates", step, c.text, got, c.want)
		}
	}
}
