package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOperatorTokenFileMustBePrivate: afloat quota tenants refuses a
// --token-file its group or others may read (docs/guide.md's own walkthrough
// wrote one with the umask's 0644), exit 2, before anything is sent.
func TestOperatorTokenFileMustBePrivate(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "op.token")
	if err := os.WriteFile(tok, []byte("alice-token-0123456789\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tok, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	status, out, errOut := call(t, "", "quota", "tenants", "list", "--coordinator", "127.0.0.1:1", "--token-file", tok)
	if status != 2 || out != "" || !strings.Contains(errOut, "--token-file "+tok+": mode 0644") || !strings.Contains(errOut, "chmod 600") {
		t.Fatalf("status %d, stdout %q, stderr %q; want 2 and the mode refused", status, out, errOut)
	}
}
