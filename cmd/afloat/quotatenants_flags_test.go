package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/afloat/afloat/internal/cli"
)

// TestQuotaTenantsFlags: each refused command line names its flag, and
// never prints the token. (The tenant's values are the coordinator's to
// check: TestQuotaTenantsRoundTrip.)
func TestQuotaTenantsFlags(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("alice-token-0123456789\n"), 0o600) //nolint:errcheck
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abc\n"), 0o600) //nolint:errcheck
	t.Setenv(tokenEnv, "")
	base := []string{"--coordinator", "127.0.0.1:7070", "--token-file", tok}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"quota", "tenants"}, "want a verb first"},
		{[]string{"quota", "tenants", "rename"}, "want a verb first"},
		{[]string{"quota", "tenants", "list"}, "--coordinator: empty"},
		{[]string{"quota", "tenants", "list", "--coordinator", "127.0.0.1:7070"}, "--token-file: want the operator's token"},
		{[]string{"quota", "tenants", "list", "--coordinator", "127.0.0.1:7070", "--token-file", short}, "a token of 3 bytes: want at least 16"},
		{[]string{"quota", "tenants", "list", "--coordinator", "127.0.0.1:7070", "--token-file", filepath.Join(dir, "none")}, "--token-file: open"},
		{append([]string{"quota", "tenants", "get"}, base...), "--name: want the tenant's name"},
		{append([]string{"quota", "tenants", "delete", "--name", "x", "--rate", "1"}, base...), "unknown flag --rate"},
	} {
		var out, errOut bytes.Buffer
		st := run(c.args, strings.NewReader(""), &out, &errOut)
		if st != cli.ExitUsage || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: status %d, %q; want 2 naming %q", c.args, st, errOut.String(), c.want)
		}
		if strings.Contains(out.String()+errOut.String(), "alice-token") {
			t.Errorf("%v: the token was printed", c.args)
		}
	}
}
