//go:build embedetcd

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/servicetest"
)

// TestQuotaTenantsRoundTrip: afloat quota tenants against a coordinator on
// embedded etcd: create, get, update, list, delete; a coordinator that
// restarts on the same etcd serves the changed tenants, not its file's.
func TestQuotaTenantsRoundTrip(t *testing.T) {
	c := servicetest.New(t, `regions:
  eu: {token: "eu-token-0123456789abcdef"}
tenants:
  - {name: acme, rate: 500, burst: 6000}
operators:
  alice: {token: "alice-token-0123456789"}
`)
	tokFile := filepath.Join(c.Dir, "token")
	os.WriteFile(tokFile, []byte("alice-token-0123456789\n"), 0o600) //nolint:errcheck
	start := func() (string, func()) {
		p := c.Coordinator(replica.Options{})
		return p.Addr, func() { p.Stop() } //nolint:errcheck // stopped as asked
	}
	addr, stop := start()
	addr2, stop2 := start()
	defer func() { stop(); stop2() }() // the ones running at the end
	tenants := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		full := append([]string{"quota", "tenants", args[0], "--coordinator", addr + "," + addr2, "--token-file", tokFile}, args[1:]...)
		var status int
		for range 100 { // until the coordinator leads
			out.Reset()
			errOut.Reset()
			status = run(full, strings.NewReader(""), &out, &errOut)
			if !strings.Contains(errOut.String(), "not the leader") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		return status, out.String(), errOut.String()
	}
	if st, out, errOut := tenants("create", "--name", "beta", "--rate", "10", "--burst", "100", "--lease", "2s"); st != 0 || !strings.Contains(out, `"version":1`) {
		t.Fatalf("create: %d %s %s", st, out, errOut)
	}
	if st, _, errOut := tenants("create", "--name", "beta", "--rate", "10", "--burst", "100"); st != 1 || !strings.Contains(errOut, "409") {
		t.Fatalf("duplicate create: %d %s", st, errOut)
	}
	if st, out, errOut := tenants("update", "--name", "acme", "--rate", "300", "--version", "1"); st != 0 || !strings.Contains(out, `"rate":300`) {
		t.Fatalf("update: %d %s %s", st, out, errOut)
	}
	// The values are the coordinator's to check: its refusal names the
	// field and the range, and changes nothing.
	for i, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"update", "--name", "acme", "--rate", "-3"}, "tenant.rate -3: want above 0"},
		{[]string{"update", "--name", "acme", "--mode", "soft"}, `"soft"`},
		{[]string{"update", "--name", "acme", "--lease", "soon"}, `"soon": want a duration`},
		{[]string{"update", "--name", "acme", "--regions", ","}, "region"},
		{[]string{"create", "--name", "gamma", "--rate", "1"}, "burst"},
	} {
		if st, _, errOut := tenants(tc.args...); st != 1 || !strings.Contains(errOut, "422") || !strings.Contains(errOut, tc.want) {
			t.Errorf("step %d: %v: %d %s; want 1 and the coordinator's refusal naming %q", i, tc.args, st, errOut, tc.want)
		}
	}
	if st, _, errOut := tenants("update", "--name", "acme", "--mode", "best-effort", "--emergency", "99999"); st != 1 || !strings.Contains(errOut, "emergency") {
		t.Fatalf("bad emergency: %d %s", st, errOut)
	}
	if st, out, errOut := tenants("get", "--name", "beta"); st != 0 || !strings.Contains(out, `"lease_duration":"2s"`) || !strings.Contains(out, `"by":"alice"`) {
		t.Fatalf("get: %d %s %s", st, out, errOut)
	}
	// The follower, asked alone, names the leader; given both, the CLI
	// goes on to the leader.
	follower, leader := "", ""
	for _, a := range []string{addr, addr2} {
		var out, errOut bytes.Buffer
		var st int
		for range 50 { // until the follower has read who leads (every 250 ms)
			out.Reset()
			errOut.Reset()
			st = run([]string{"quota", "tenants", "list", "--coordinator", a, "--token-file", tokFile}, strings.NewReader(""), &out, &errOut)
			if !strings.HasSuffix(strings.TrimSpace(errOut.String()), "this coordinator is not the leader") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if st == 0 {
			leader = a
		} else if strings.Contains(errOut.String(), "is not the leader; the leader is http://") {
			follower = a
		} else {
			t.Fatalf("list at %s: %d %s", a, st, errOut.String())
		}
		if strings.Contains(out.String()+errOut.String(), "alice-token") {
			t.Fatal("the token was printed")
		}
	}
	if follower == "" || leader == "" {
		t.Fatalf("leader %q, follower %q", leader, follower)
	}
	// The leader stops: the follower takes over, from etcd's tenants; the
	// stopped one starts again in its place, on the same etcd, and serves
	// the ledger's tenants, not the file's. (Either may have led: on a busy
	// machine the second to start sometimes wins the election.)
	if leader == addr {
		stop()
		addr, stop = start()
	} else {
		stop2()
		addr2, stop2 = start()
	}
	st, out, errOut := tenants("list")
	var list struct{ Tenants []replica.TenantView }
	if st != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Tenants) != 2 || list.Tenants[0].Name != "acme" || list.Tenants[0].Rate != 300 {
		t.Fatalf("list after restart: %d %s %s", st, out, errOut)
	}
	if st, _, errOut := tenants("delete", "--name", "beta"); st != 0 {
		t.Fatalf("delete: %d %s", st, errOut)
	}
	if st, _, errOut := tenants("get", "--name", "beta"); st != 1 || !strings.Contains(errOut, "404") {
		t.Fatalf("get after delete: %d %s", st, errOut)
	}
	if strings.Contains(errOut+out, "alice-token") {
		t.Fatal("the token was printed")
	}
}
