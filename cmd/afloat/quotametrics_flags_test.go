package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/afloat/afloat/internal/cli"
)

// TestQuotaMetricsFlags: --metrics-tenants and --metrics-top reach the
// processes' options, whose refusals name the flag and the range, before
// anything starts; so is a --memory-limit-mb out of range.
func TestQuotaMetricsFlags(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "quota.yaml")
	if err := os.WriteFile(cfg, []byte(`regions:
  eu: {token: "eu-token-0123456789"}
tenants:
  - {name: acme, rate: 10, burst: 20}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	region := []string{"quota", "region", "--name", "eu", "--coordinator", "127.0.0.1:1", "--config", cfg}
	coordinator := []string{"quota", "coordinator", "--config", cfg}
	for i, c := range []struct {
		args []string
		want string
	}{
		{append(region, "--metrics-top", "101"), "--metrics-top 101: want 0 (none) to 100 tenants"},
		{append(region, "--metrics-top", "-1"), "--metrics-top -1: want 0 (none) to 100 tenants"},
		{append(region, "--metrics-tenants", "acme,beta,acme"), `--metrics-tenants: "acme" given twice`},
		{append(region, "--metrics-tenants", "a/b"), `--metrics-tenants: name 1 "a/b": want 1 to 128 bytes, no slash`},
		{append(region, "--metrics-tenants", ","), "--metrics-tenants \",\": empty"},
		{append(coordinator, "--metrics-tenants", "acme,acme"), `--metrics-tenants: "acme" given twice`},
		{append(coordinator, "--metrics-tenants", strings.Repeat("t,", 100)+"u"), "--metrics-tenants: 101 names: want 0 to 100"},
		{append(coordinator, "--memory-limit-mb", "63"), "--memory-limit-mb 63: want 64 to 1048576 (MiB), or 0 for none"},
		{append(coordinator, "--memory-limit-mb", "-1"), "--memory-limit-mb -1: want 64 to 1048576 (MiB), or 0 for none"},
		{append(coordinator, "--memory-limit-mb", "1048577"), "--memory-limit-mb 1048577: want 64 to 1048576 (MiB), or 0 for none"},
	} {
		var out, errOut bytes.Buffer
		st := run(c.args, strings.NewReader(""), &out, &errOut)
		if st != cli.ExitUsage || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("step %d: %v: status %d, %q; want 2 naming %q", i, c.args, st, errOut.String(), c.want)
		}
	}
}
