//go:build embedetcd

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/service"
)

// TestQuotaTenantsRoundTrip: afloat quota tenants against a coordinator on
// embedded etcd: create, get, update, list, delete; a coordinator that
// restarts on the same etcd serves the changed tenants, not its file's.
func TestQuotaTenantsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	cfg, err := service.ParseConfig([]byte(`regions:
  eu: {token: "eu-token-0123456789abcdef"}
tenants:
  - {name: acme, rate: 500, burst: 6000}
operators:
  alice: {token: "alice-token-0123456789"}
`))
	if err != nil {
		t.Fatal(err)
	}
	tokFile := filepath.Join(dir, "token")
	os.WriteFile(tokFile, []byte("alice-token-0123456789\n"), 0o600) //nolint:errcheck
	start := func() (string, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			done <- service.RunCoordinator(ctx, service.CoordinatorOptions{Config: cfg, Listen: "127.0.0.1:0",
				DataDir: filepath.Join(dir, "etcd"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				EventLog: filepath.Join(dir, "coordinator.jsonl"),
				Ready:    func(a string) { ready <- a }})
		}()
		var addr string
		select {
		case addr = <-ready:
		case err := <-done:
			t.Fatal(err)
		case <-time.After(60 * time.Second):
			t.Fatal("the coordinator did not start")
		}
		return addr, func() { cancel(); <-done }
	}
	addr, stop := start()
	tenants := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		full := append([]string{"quota", "tenants", args[0], "--coordinator", addr, "--token-file", tokFile}, args[1:]...)
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
	if st, _, errOut := tenants("update", "--name", "acme", "--rate", "-3"); st != 2 || !strings.Contains(errOut, "--rate -3") {
		t.Fatalf("bad flag: %d %s", st, errOut)
	}
	if st, _, errOut := tenants("update", "--name", "acme", "--mode", "best-effort", "--emergency", "99999"); st != 1 || !strings.Contains(errOut, "emergency") {
		t.Fatalf("bad emergency: %d %s", st, errOut)
	}
	if st, out, errOut := tenants("get", "--name", "beta"); st != 0 || !strings.Contains(out, `"lease_duration":"2s"`) || !strings.Contains(out, `"by":"alice"`) {
		t.Fatalf("get: %d %s %s", st, out, errOut)
	}
	stop()
	// Restarted on the same etcd: the ledger's tenants, not the file's.
	addr, stop = start()
	defer stop()
	st, out, errOut := tenants("list")
	var list struct{ Tenants []service.TenantView }
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
