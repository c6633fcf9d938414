package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenFilesMustBePrivate: a token file its group or others may read
// or write is refused, naming the field, the mode and the fix — it was
// read silently, the token open to every user of the machine; 0600 and
// 0400 are read, through a symbolic link too.
func TestTokenFilesMustBePrivate(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	must(t, os.WriteFile(tok, []byte("a-token-0123456789abcdef\n"), 0o600))
	cfgFile := func(section string) string {
		p := filepath.Join(dir, "q.yaml")
		must(t, os.WriteFile(p, []byte(section), 0o600))
		return p
	}
	files := map[string]string{
		"regions.eu.token_file": cfgFile("regions: {eu: {token_file: " + tok + "}}\ntenants: [{name: a, rate: 1, burst: 1}]\n"),
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o620, 0o602, 0o666, 0o610} {
		must(t, os.Chmod(tok, mode))
		for field, path := range files {
			_, err := LoadConfig(path)
			if !errors.Is(err, ErrConfigFile) || !strings.Contains(err.Error(), field+" "+tok) ||
				!strings.Contains(err.Error(), "want 0600 or 0400") {
				t.Errorf("mode %04o: %s: %v, want a refusal naming the field and the mode", mode, field, err)
			}
		}
		// A token file of its own is not a config file: the operator's
		// --token-file is refused as what it is.
		if _, err := ReadTokenFile("--token-file", tok); !errors.Is(err, ErrTokenFile) || errors.Is(err, ErrConfigFile) {
			t.Errorf("mode %04o: ReadTokenFile: %v, want ErrTokenFile alone", mode, err)
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o400} {
		must(t, os.Chmod(tok, mode))
		cfg, err := LoadConfig(files["regions.eu.token_file"])
		if err != nil || cfg.Regions["eu"].Token != "a-token-0123456789abcdef" {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
	// Through a link, the file's own bits count.
	link := filepath.Join(dir, "link")
	must(t, os.Symlink(tok, link))
	must(t, os.Chmod(tok, 0o644))
	if _, err := ReadTokenFile("envoy.token_file", link); err == nil || !strings.Contains(err.Error(), "0644") {
		t.Errorf("a link to a 0644 file: %v", err)
	}
	must(t, os.Chmod(tok, 0o600))
	if got, err := ReadTokenFile("envoy.token_file", link); err != nil || got != "a-token-0123456789abcdef" {
		t.Errorf("a link to a 0600 file: %q %v", got, err)
	}
	if _, err := ReadTokenFile("x", dir); err == nil {
		t.Error("a directory was read as a token file")
	}
}
