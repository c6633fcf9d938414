package main

import (
	"strings"
	"testing"
)

// TestQuotaRegionFrontFlags: the region agent's Envoy and proxy flags are
// refused with the flag's name and the rule, exit 2, before anything
// starts.
func TestQuotaRegionFrontFlags(t *testing.T) {
	base := []string{"quota", "region", "--name", "eu", "--coordinator", "127.0.0.1:1"}
	fronts := append(base[:len(base):len(base)], "--config", "testdata/quota-fronts.yaml")
	bare := append(base[:len(base):len(base)], "--config", "testdata/quota-bare.yaml")
	with := func(b []string, more ...string) []string { return append(b[:len(b):len(b)], more...) }
	for i, tc := range []struct {
		args []string
		want string
	}{
		{with(fronts, "--grpc-listen", "127.0.0.1:70000"), `--grpc-listen "127.0.0.1:70000"`},
		{with(fronts, "--grpc-listen", "0.0.0.0:9000"), "--grpc-listen 0.0.0.0:9000: not a loopback address: set envoy.token"},
		{with(bare, "--grpc-listen", "127.0.0.1:9000"), "--grpc-listen: the config has no envoy section"},
		{with(fronts, "--upstream", "ftp://files"), `--upstream "ftp://files": scheme "ftp": want http or https`},
		{with(fronts, "--upstream", "http://"), "no host"},
		{with(fronts, "--upstream", "http://u:secret@host"), "user info"},
		{with(fronts, "--upstream", "http://host:99999"), "port 99999: want 1 to 65535"},
		{with(fronts, "--proxy-listen", "127.0.0.1:7090"), "--proxy-listen: the proxy needs --upstream URL"},
		{with(fronts, "--upstream", "http://127.0.0.1:8080", "--proxy-listen", "127.0.0.1:70000"), `--proxy-listen "127.0.0.1:70000"`},
		{with(bare, "--upstream", "http://127.0.0.1:8080"), "--upstream: the config has no proxy section"},
	} {
		status, out, errOut := call(t, "", tc.args...)
		if status != 2 || out != "" || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "secret") {
			t.Errorf("step %d: afloat %v: status %d, stdout %q, stderr %q; want 2 and a message mentioning %q", i, tc.args, status, out, errOut, tc.want)
		}
	}
}
