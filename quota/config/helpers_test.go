package config

import (
	"os"
	"path/filepath"
	"testing"
)

// good and fronted are the files in testdata: a cluster of two regions
// and one tenant, and one with fronts (envoy and proxy), which the
// agent's tests read too.
var (
	good    = fixture("good.yaml")
	fronted = fixture("fronted.yaml")
)

func fixture(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustConfig(t *testing.T, s string) *Config {
	t.Helper()
	cfg, err := ParseConfig([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
