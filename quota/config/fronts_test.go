package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFrontConfigErrors: the envoy and proxy sections' refusals name the
// field and the range.
func TestFrontConfigErrors(t *testing.T) {
	envoy := func(body string) string { return good + "envoy:\n" + body }
	rule := "  descriptors:\n    - {entries: [{key: k, value: v}], tenant: acme}\n"
	proxy := func(body string) string { return good + "proxy:\n" + body }
	for i, tc := range []struct{ file, want string }{
		{envoy("  headers: none\n" + rule), `envoy.domain "": want 1 to 256 bytes`},
		{envoy("  domain: " + strings.Repeat("d", 257) + "\n" + rule), "envoy.domain"},
		{envoy("  domain: edge\n"), "envoy.descriptors: 0: want 1 to 10000"},
		{envoy("  domain: edge\n  headers: draft\n" + rule), `envoy.headers "draft": want x-ratelimit, ratelimit or none`},
		{envoy("  domain: edge\n  token: short\n" + rule), "envoy.token: 5 bytes: want at least 16"},
		{envoy("  domain: edge\n  token: envoy-token-0123456789\n  token_file: /x\n" + rule), "envoy.token and token_file: give one"},
		{envoy("  domain: edge\n  descriptors:\n    - {entries: [], tenant: acme}\n"), "envoy.descriptors[0].entries: 0: want 1 to 16"},
		{envoy("  domain: edge\n  descriptors:\n    - {entries: [{value: v}], tenant: acme}\n"), `envoy.descriptors[0].entries[0].key "": want 1 to 1024 bytes`},
		{envoy("  domain: edge\n  descriptors:\n    - {entries: [{key: k, value: " + strings.Repeat("v", 1025) + "}], tenant: acme}\n"), "envoy.descriptors[0].entries[0].value: 1025 bytes: want at most 1024"},
		{envoy("  domain: edge\n  descriptors:\n    - {entries: [{key: k}], tenant: mallory}\n"), `envoy.descriptors[0].tenant "mallory": not in tenants`},
		{envoy("  domain: edge\n  descriptors:\n    - {entries: [{key: k}], tenant: acme, endpoint: " + strings.Repeat("e", 1025) + "}\n"), "envoy.descriptors[0].endpoint: 1025 bytes"},
		{envoy("  domain: edge\n" + rule + "    - {entries: [{key: k, value: v}], tenant: acme, endpoint: /x}\n"), "envoy.descriptors[1].entries: the same as descriptors[0].entries"},
		{envoy("  domain: edge\n  bogus: 1\n" + rule), "field bogus not found"},
		{envoy("  domain: edge\n  token: eu-token-0123456789\n" + rule), "envoy.token: the same as regions.eu.token: each needs its own"},
		{proxy("  tenant_header: 'X Tenant'\n"), `proxy.tenant_header "X Tenant": want a header name`},
		{proxy("  routes:\n    - {host: 'a.test:80', tenant: acme}\n"), `proxy.routes[0].host "a.test:80": want a host name without port`},
		{proxy("  routes:\n    - {path_prefix: search, tenant: acme}\n"), `proxy.routes[0].path_prefix "search": want a path starting with /`},
		{proxy("  routes:\n    - {host: a.test}\n"), `proxy.routes[0].tenant "": not in tenants`},
		{proxy("  routes:\n    - {tenant: acme, endpoint: " + strings.Repeat("e", 1025) + "}\n"), "proxy.routes[0].endpoint: 1025 bytes"},
	} {
		_, err := ParseConfig([]byte(tc.file))
		if !errors.Is(err, ErrConfigFile) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("step %d: %v, want ErrConfigFile naming %q", i, err, tc.want)
		}
	}
	cfg := mustConfig(t, fronted)
	if cfg.Envoy.Headers != "x-ratelimit" || cfg.Proxy.TenantHeader != "X-Tenant" || cfg.Proxy.Routes[1].Host != "api.acme.test" {
		t.Fatalf("defaults and canonical forms: %+v %+v", cfg.Envoy, cfg.Proxy)
	}
	// The token from a file; a short one is refused.
	dir := t.TempDir()
	tok := filepath.Join(dir, "envoy.token")
	path := filepath.Join(dir, "q.yaml")
	must(t, os.WriteFile(path, []byte(strings.Replace(fronted, "domain: edge", "domain: edge\n  token_file: "+tok, 1)), 0o600))
	must(t, os.WriteFile(tok, []byte("envoy-token-from-a-file\n"), 0o600))
	if cfg, err := LoadConfig(path); err != nil || cfg.Envoy.Token != "envoy-token-from-a-file" {
		t.Fatalf("envoy.token_file: %v", err)
	}
	must(t, os.WriteFile(tok, []byte("short\n"), 0o600))
	if _, err := LoadConfig(path); !errors.Is(err, ErrConfigFile) || !strings.Contains(err.Error(), "envoy.token_file: a token of 5 bytes") {
		t.Fatalf("a short envoy.token_file: %v", err)
	}
}

// TestExampleConfigHasEveryFront: the example config (docs/quota-cluster.yaml,
// the walkthrough's) loads, and carries an envoy: and a proxy: section, so
// that a region agent started from it runs every front
// docs/quota/operations.md documents — --grpc-listen and --upstream —
// without a section copied in.
func TestExampleConfigHasEveryFront(t *testing.T) {
	cfg, err := LoadConfig(filepath.Join("..", "..", "docs", "quota-cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Envoy.Descriptors) == 0 || cfg.Envoy.Domain == "" {
		t.Errorf("the example config's envoy section: %+v: want a domain and descriptors", cfg.Envoy)
	}
	if len(cfg.Proxy.Routes) == 0 {
		t.Errorf("the example config's proxy section: %+v: want routes", cfg.Proxy)
	}
}
