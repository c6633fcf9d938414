package main

import (
	"strings"
	"testing"
)

// TestQuotaListenerFlags: the region agent refuses a --listen address
// beyond loopback without --allow-remote (it used to serve the decision
// API, which has no authentication, on any address), and both processes
// refuse a --host that is not a host name; exit 2, before anything
// starts. (10.255.255.1 is not this machine's: nothing is bound.)
func TestQuotaListenerFlags(t *testing.T) {
	region := []string{"quota", "region", "--name", "eu", "--coordinator", "127.0.0.1:1", "--config", "../../docs/quota-cluster.yaml"}
	with := func(b []string, more ...string) []string { return append(b[:len(b):len(b)], more...) }
	for i, tc := range []struct {
		args []string
		want string
	}{
		{with(region, "--listen", "10.255.255.1:7080"), "--listen 10.255.255.1:7080: beyond loopback"},
		{with(region, "--listen", "10.255.255.1:7080"), "(--allow-remote)"},
		{with(region, "--host", "evil.example:80"), `--host: hostcheck: invalid host name: "evil.example:80"`},
		{[]string{"quota", "coordinator", "--config", "../../docs/quota-cluster.yaml", "--host", "http://quota.internal"}, `--host: hostcheck: invalid host name: "http://quota.internal"`},
	} {
		status, out, errOut := call(t, "", tc.args...)
		if status != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("step %d: afloat %v: status %d, stdout %q, stderr %q; want 2 and a message mentioning %q", i, tc.args, status, out, errOut, tc.want)
		}
	}
}
