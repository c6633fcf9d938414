package conventions

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var (
	// linkRe is a Markdown link's target: a path, an anchor, or both.
	linkRe = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// fenceRe is a fenced code block, whose text is neither links nor
	// headings.
	fenceRe = regexp.MustCompile("(?ms)^```.*?^```")
	// headingRe is a Markdown heading.
	headingRe = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	// schemeRe starts a URL (https:, mailto:), which is not checked.
	schemeRe = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)
)

// anchors lists the anchors GitHub gives the headings of a Markdown
// text: lower case, spaces to hyphens, every character but letters,
// digits, hyphens and underscores dropped, and -1, -2… for a heading met
// again.
func anchors(text string) map[string]bool {
	out, seen := map[string]bool{}, map[string]int{}
	for _, m := range headingRe.FindAllStringSubmatch(fenceRe.ReplaceAllString(text, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocsLinksResolve: every relative link of the Markdown under docs/,
// and of the README and the changelog, leads to a file that exists, and
// an anchor into a Markdown file to one of its headings — so that moving
// a section (docs/quota.md became docs/quota/design.md, operations.md and
// config.md) cannot leave a link behind.
func TestDocsLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	links := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, m := range linkRe.FindAllStringSubmatch(fenceRe.ReplaceAllString(string(raw), ""), -1) {
			target := m[1]
			if schemeRe.MatchString(target) {
				continue // a URL
			}
			links++
			path, anchor, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
			}
			text, err := os.ReadFile(dest)
			if err != nil {
				if _, serr := os.Stat(dest); serr == nil {
					continue // a folder
				}
				t.Errorf("%s links to %s: %v", rel, target, err)
				continue
			}
			if anchor != "" && strings.HasSuffix(dest, ".md") && !anchors(string(text))[anchor] {
				t.Errorf("%s links to %s: no such heading in %s", rel, target, path)
			}
		}
	}
	if links < 100 {
		t.Errorf("%d relative links found: want the docs' links (more than 100)", links)
	}
}
