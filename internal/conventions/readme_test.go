package conventions

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeIsAFrontPage: the README opens with exactly the two set-up
// commands — the console, then the tests — and stays a front page of
// at most 150 lines, its links into the repository all leading
// somewhere: the long version is docs/guide.md.
func TestReadmeIsAFrontPage(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > 150 {
		t.Errorf("README.md has %d lines: want a front page of at most 150 (the rest belongs in docs/guide.md)", len(lines))
	}
	if len(lines) < 5 || lines[0] != "# afloat" || lines[1] != "" || lines[2] != "```sh" ||
		!strings.HasPrefix(lines[3], "go run ./cmd/afloat ") || !strings.HasPrefix(lines[4], "make test ") || lines[5] != "```" {
		t.Errorf("README.md opens with %q: want the title, then a sh block of exactly `go run ./cmd/afloat` and `make test`", lines[:min(6, len(lines))])
	}
	for _, m := range regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`).FindAllStringSubmatch(text, -1) {
		if _, err := os.Stat(filepath.Join("..", "..", m[1])); err != nil {
			t.Errorf("README.md links to %s: %v", m[1], err)
		}
	}
}
