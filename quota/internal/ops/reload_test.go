package ops

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/afloat/afloat/quota/config"
)

// TestReloadConfig: a reload names the principals whose tokens changed
// and the sections that wait for a restart; a file that does not load,
// or adds or removes a region, is refused, and no error holds a token.
func TestReloadConfig(t *testing.T) {
	const base = `regions:
  eu: {token: "eu-token-0123456789"}
  us: {token: "us-token-0123456789"}
tenants: [{name: acme, rate: 10, burst: 10}]
operators:
  alice: {token: "alice-token-0123456789"}
`
	old, err := config.ParseConfig([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	for i, tc := range []struct {
		file             string
		principals, rest []string
		refused          string
	}{
		{base, nil, nil, ""},
		{strings.Replace(base, `{token: "eu-token-0123456789"}`, `{token: "eu-token-0123456789", accepted_tokens: ["eu-token-new-0123456789"]}`, 1),
			[]string{"regions.eu"}, nil, ""},
		{strings.Replace(base, `alice: {token: "alice-token-0123456789"}`, `bob: {token: "bob-token-0123456789"}`, 1),
			[]string{"operators.alice", "operators.bob"}, nil, ""},
		{strings.Replace(base, "rate: 10", "rate: 20", 1), nil, []string{"tenants"}, ""},
		{strings.Replace(base, "rate: 10", "rate: 20", 1) + "etcd: {session_ttl: 7}\n", nil, []string{"tenants", "etcd"}, ""},
		{"regions: [\n", nil, nil, "yaml"},
		{strings.Replace(base, `"us-token-0123456789"`, `"short-token"`, 1), nil, nil, "regions.us.token: 11 bytes"},
		{strings.Replace(base, `  us: {token: "us-token-0123456789"}`, `  us: {token: "us-token-0123456789"}
  mars: {token: "mars-token-0123456789"}`, 1), nil, nil, "adding or removing a region takes a restart"},
	} {
		os.WriteFile(path, []byte(tc.file), 0o600)
		cfg, ch, err := ReloadConfig(path, old)
		switch {
		case tc.refused != "":
			if !errors.Is(err, config.ErrConfigFile) || !strings.Contains(err.Error(), tc.refused) || cfg != nil {
				t.Errorf("step %d: %v, want refused naming %q", i, err, tc.refused)
			}
			if err != nil && strings.Contains(err.Error(), "-token-") {
				t.Errorf("step %d: the refusal holds a token: %v", i, err)
			}
		case err != nil:
			t.Errorf("step %d: %v", i, err)
		case !slices.Equal(ch.Principals, tc.principals) || !slices.Equal(ch.NotApplied, tc.rest):
			t.Errorf("step %d: %+v, want principals %v, not applied %v", i, ch, tc.principals, tc.rest)
		}
	}
}
