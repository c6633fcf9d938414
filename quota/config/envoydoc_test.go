package config

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// yamlBlocks returns the ```yaml blocks of a Markdown file.
func yamlBlocks(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	var out []string
	parts := strings.Split(string(data), "```yaml\n")
	for _, p := range parts[1:] {
		end := strings.Index(p, "```")
		if end < 0 {
			t.Fatalf("%s: an unclosed yaml block", path)
		}
		out = append(out, p[:end])
	}
	return out
}

// TestEnvoyDocSnippets: the docs' Envoy and proxy config blocks are
// valid — ours through ParseConfig, Envoy's as a v3 Bootstrap through
// go-control-plane's types and their validation rules — and Envoy's
// points at the domain and the port the docs give the agent.
func TestEnvoyDocSnippets(t *testing.T) {
	var sawEnvoy, sawProxy, sawBootstrap bool
	for _, b := range yamlBlocks(t, "../../docs/quota/operations.md") {
		switch {
		case strings.HasPrefix(b, "envoy:"), strings.HasPrefix(b, "proxy:"):
			sawEnvoy = sawEnvoy || strings.HasPrefix(b, "envoy:")
			sawProxy = sawProxy || strings.HasPrefix(b, "proxy:")
			file := strings.Replace(good, "{name: acme, rate: 500, burst: 6000}", "{name: acme, rate: 500, burst: 6000, costs: {/export: 100}}", 1) +
				"  - {name: globex, rate: 50, burst: 200}\n" + b
			if _, err := ParseConfig([]byte(file)); err != nil {
				t.Errorf("the docs' block %.40q…: %v", b, err)
			}
		case strings.HasPrefix(b, "static_resources:"):
			sawBootstrap = true
			var v any
			must(t, yaml.Unmarshal([]byte(b), &v))
			js, err := json.Marshal(v)
			must(t, err)
			var boot bootstrapv3.Bootstrap
			if err := protojson.Unmarshal(js, &boot); err != nil {
				t.Fatalf("the docs' Envoy config: %v", err)
			}
			if err := boot.ValidateAll(); err != nil {
				t.Fatalf("the docs' Envoy config: %v", err)
			}
			if !strings.Contains(b, "domain: edge") || !strings.Contains(b, "port_value: 7081") {
				t.Fatal("the docs' Envoy config does not use domain edge and the agent's port 7081")
			}
		}
	}
	if !sawEnvoy || !sawProxy || !sawBootstrap {
		t.Fatalf("docs/quota/operations.md: envoy block %v, proxy block %v, Envoy config %v", sawEnvoy, sawProxy, sawBootstrap)
	}
}
