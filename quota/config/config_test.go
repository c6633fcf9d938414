package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestConfigErrorsNameTheField: every refusal names its field and the
// range.
func TestConfigErrorsNameTheField(t *testing.T) {
	for i, tc := range []struct{ file, want string }{
		{"", "the file is empty"},
		{"regions: [", "yaml"},
		{good + "\nbogus: 1\n", "field bogus not found"},
		{strings.Replace(good, "rate: 500", "rate: -1", 1), "tenants[0].rate -1: want above 0"},
		{strings.Replace(good, "rate: 500", "rate: .nan", 1), "tenants[0].rate NaN"},
		{strings.Replace(good, "burst: 6000", "burst: 1e13", 1), "tenants[0].burst 1e+13: want 0 to 1e12"},
		{strings.Replace(good, "{name: acme,", "{name: acme, mode: soft,", 1), `tenants[0].mode "soft": want hard or best-effort`},
		{strings.Replace(good, "{name: acme,", "{name: acme, regions: [eu, mars],", 1), `tenants[0].regions[1] "mars": not in regions`},
		{strings.Replace(good, "{name: acme,", "{name: acme, emergency: 5,", 1), "tenants[0]: quota: invalid configuration: tenant \"acme\": emergency allowance 5 in hard mode"},
		{strings.Replace(good, "{name: acme,", "{name: acme, lease_duration: 1ms,", 1), "lease duration 1ms: want 100ms to 1h"},
		{good + "  - {name: acme, rate: 1, burst: 1}\n", `tenants[1].name "acme": already tenants[0]`},
		{strings.Replace(good, `"eu-token-0123456789"`, `"short"`, 1), "regions.eu.token: 5 bytes: want at least 16"},
		{strings.Replace(good, `"eu-token-0123456789"`, `"us-token-0123456789"`, 1), "regions.us.token: the same as regions.eu.token"},
		{"regions: {}\ntenants: [{name: a, rate: 1}]\n", "regions: 0: want 1 to 64"},
		{strings.Replace(good, "tenants:\n  - {name: acme, rate: 500, burst: 6000}", "tenants: []", 1), "tenants: 0: want 1 to 100000"},
		{good + "etcd: {session_ttl: 9999}\n", "etcd.session_ttl 9999: want 1 to 600"},
		{good + "etcd: {reserve: 2m}\n", "etcd.reserve 2m0s: want 0s to 1m (and none: it is no longer used)"},
		{good + "etcd: {reserve: -1s}\n", "etcd.reserve -1s: want 0s to 1m (and none: it is no longer used)"},
		{good + "etcd: {max_txn_ops: 2}\n", "etcd.max_txn_ops 2: want 8 to 1000000"},
		{good + "etcd: {depose_after: -2}\n", "etcd.depose_after -2: want 1 to 600 seconds, or -1 for never"},
		{good + "etcd: {prefix: nope}\n", `etcd.prefix "nope": want a path starting with /`},
		{good + "agent: {retry: 5s, max_retry: 1s}\n", "agent.retry 5s, agent.max_retry 1s"},
		{good + "operators: {alice: {token: short}}\n", "operators.alice.token: 5 bytes: want at least 16"},
		{good + "operators: {alice: {token: \"eu-token-0123456789\"}}\n", "operators.alice.token: the same as regions.eu.token"},
		{good + "operators: {\"a b\": {token: \"alice-token-0123456789\"}}\n", `operators: name "a b"`},
		{good + "operators: {alice: {token: \"alice-token-0123456789\", token_file: x}}\n", "operators.alice: token and token_file: give one"},
		{strings.Replace(good, `{token: "eu-token-0123456789"}`, `{token: "eu-token-0123456789", accepted_tokens: [short]}`, 1), "regions.eu.accepted_tokens[0]: 5 bytes: want at least 16"},
		{strings.Replace(good, `{token: "eu-token-0123456789"}`, `{token: "eu-token-0123456789", accepted_tokens: ["us-token-0123456789"]}`, 1), "regions.us.token: the same as regions.eu.accepted_tokens[0]"},
		{good + "operators: {alice: {token: \"alice-token-0123456789\", accepted_tokens: [\"eu-token-0123456789\"]}}\n", "operators.alice.accepted_tokens[0]: the same as regions.eu.token"},
	} {
		_, err := ParseConfig([]byte(tc.file))
		if !errors.Is(err, ErrConfigFile) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("step %d: %v, want ErrConfigFile naming %q", i, err, tc.want)
		}
	}
	cfg, err := ParseConfig([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster != "afloat" || cfg.Agent.Retry == 0 || len(cfg.TenantsOf("us")) != 1 {
		t.Fatalf("defaults: %+v", cfg)
	}
	// JSON is a config file too.
	if _, err := ParseConfig([]byte(`{"regions":{"eu":{"token":"eu-token-0123456789"}},"tenants":[{"name":"a","rate":1,"burst":1}]}`)); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	// A token file.
	dir := t.TempDir()
	tok := filepath.Join(dir, "eu.token")
	os.WriteFile(tok, []byte("eu-token-from-a-file\n"), 0o600)
	path := filepath.Join(dir, "q.yaml")
	os.WriteFile(path, []byte("regions: {eu: {token_file: "+tok+"}}\ntenants: [{name: a, rate: 1, burst: 1}]\n"), 0o600)
	cfg, err = LoadConfig(path)
	if err != nil || cfg.Regions["eu"].Token != "eu-token-from-a-file" {
		t.Fatalf("token file: %v %+v", err, cfg)
	}
	if _, err := LoadConfig(filepath.Join(dir, "missing.yaml")); !errors.Is(err, ErrConfigFile) {
		t.Fatalf("a missing file: %v", err)
	}
	if _, err := LoadConfig(""); !errors.Is(err, ErrConfigFile) || !strings.Contains(err.Error(), "no file given") {
		t.Fatalf("no file: %v; want a refusal saying so", err)
	}
}

// FuzzParseConfig: no input panics, and what parses validates.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(`{"regions":{"eu":{"token":"eu-token-0123456789"}},"tenants":[{"name":"a","rate":1,"burst":1}]}`))
	f.Add([]byte("regions: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err != nil {
			if !errors.Is(err, ErrConfigFile) {
				t.Fatalf("error %v does not wrap ErrConfigFile", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("a parsed config does not validate: %v", err)
		}
	})
}

// TestRotationTokens: a principal's tokens are its token and its accepted
// tokens, each once; a region may have none (its certificate names it);
// an accepted token file is read as a token file is.
func TestRotationTokens(t *testing.T) {
	cfg, err := ParseConfig([]byte(`regions:
  eu: {token: "eu-token-new-0123456789", accepted_tokens: ["eu-token-old-0123456789", "eu-token-new-0123456789"]}
  us: {}
tenants: [{name: a, rate: 1}]
operators:
  alice: {token: "alice-token-new-012345", accepted_tokens: ["alice-token-old-012345"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, o := cfg.RegionTokens(), cfg.OperatorTokens()
	if !slices.Equal(r["eu"], []string{"eu-token-new-0123456789", "eu-token-old-0123456789"}) || len(r["us"]) != 0 {
		t.Errorf("RegionTokens() = %v", r)
	}
	if !slices.Equal(o["alice"], []string{"alice-token-new-012345", "alice-token-old-012345"}) {
		t.Errorf("OperatorTokens() = %v", o)
	}
	dir := t.TempDir()
	tok, path := filepath.Join(dir, "old.token"), filepath.Join(dir, "cluster.yaml")
	os.WriteFile(tok, []byte("eu-token-from-a-file\n"), 0o600)
	os.WriteFile(path, []byte("regions:\n  eu: {token: \"eu-token-0123456789\", accepted_token_files: ["+strconv.Quote(tok)+"]}\ntenants: [{name: a, rate: 1}]\n"), 0o600)
	cfg, err = LoadConfig(path)
	if err != nil || !slices.Equal(cfg.RegionTokens()["eu"], []string{"eu-token-0123456789", "eu-token-from-a-file"}) {
		t.Fatalf("LoadConfig with an accepted token file: %v, %v", cfg, err)
	}
	os.Chmod(tok, 0o644)
	if _, err := LoadConfig(path); !errors.Is(err, ErrConfigFile) || !strings.Contains(err.Error(), "regions.eu.accepted_token_files[0]") {
		t.Errorf("an accepted token file others may read: %v", err)
	}
}

// TestReserveDeprecated: etcd.reserve still loads, and is named as no
// longer used; a config without it has nothing deprecated.
func TestReserveDeprecated(t *testing.T) {
	for _, tc := range []struct {
		extra string
		want  int
	}{{"", 0}, {"etcd: {reserve: 0s}\n", 1}, {"etcd: {reserve: 10s}\n", 1}} {
		c, err := ParseConfig([]byte(good + tc.extra))
		if err != nil {
			t.Fatalf("%q: %v", tc.extra, err)
		}
		if got := c.Deprecated(); len(got) != tc.want || tc.want > 0 && !strings.Contains(got[0], "etcd.reserve: no longer used") {
			t.Errorf("%q: deprecated %q, want %d naming etcd.reserve", tc.extra, got, tc.want)
		}
	}
}
