//go:build embedetcd

package replica_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/etcdmember"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/internal/tlstest"
	"github.com/afloat/afloat/quota/servicetest"
)

// TestEtcdTLSAndAuth: an embedded etcd member that serves TLS, requires a
// client certificate and has authentication on; a coordinator whose
// config gives the CA, a client certificate, the user and a password
// file connects and leads. Without each of them it fails at start, its
// error naming what etcd refused and pointing at the config's etcd
// section, and never holding the password.
func TestEtcdTLSAndAuth(t *testing.T) {
	const password = "etcd-root-password-0123"
	ca := tlstest.NewCA(t)
	srvCert, srvKey := ca.Server(t)
	cliCert, cliKey := ca.Client(t)
	dir := t.TempDir()
	m, err := etcdmember.StartMember(context.Background(), etcdmember.MemberConfig{Name: "tls", DataDir: filepath.Join(dir, "etcd"),
		CertFile: srvCert, KeyFile: srvKey, ClientCAFile: ca.File, RootPassword: password})
	opstest.Must(t, err)
	defer m.Close()
	if !strings.HasPrefix(m.ClientURL, "https://") {
		t.Fatalf("client URL %s, want https", m.ClientURL)
	}
	pwFile := filepath.Join(dir, "etcd.password")
	opstest.Must(t, os.WriteFile(pwFile, []byte(password+"\n"), 0o600))
	load := func(etcd string) *config.Config {
		t.Helper()
		path := filepath.Join(dir, "cluster.yaml")
		opstest.Must(t, os.WriteFile(path, []byte(opstest.ConfigFile("good.yaml")+"etcd: "+etcd+"\n"), 0o600))
		cfg, err := config.LoadConfig(path)
		opstest.Must(t, err)
		return cfg
	}
	full := fmt.Sprintf("{ca_file: %q, cert_file: %q, key_file: %q, user: root, password_file: %q}", ca.File, cliCert, cliKey, pwFile)
	if cfg := load(full); string(cfg.Etcd.Password) != password || fmt.Sprintf("%v %+v %#v", cfg.Etcd, cfg.Etcd, cfg.Etcd) == "" ||
		strings.Contains(fmt.Sprintf("%v %+v %#v", cfg.Etcd, cfg.Etcd, cfg.Etcd), password) {
		t.Fatalf("the password file: read %d bytes; printed: %+v", len(cfg.Etcd.Password), cfg.Etcd)
	}

	c := servicetest.New(t, opstest.ConfigFile("good.yaml"))
	coord := c.Coordinator(replica.Options{Config: load(full), Etcd: []string{m.ClientURL}})
	opstest.WaitFor(t, "the coordinator leads on the TLS and auth etcd", func() bool { code, _ := opstest.Readyz(t, coord.URL); return code == 200 })
	opstest.Must(t, coord.Stop())

	for i, tc := range []struct {
		what, etcd, want string
	}{
		{"a wrong password", fmt.Sprintf("{ca_file: %q, cert_file: %q, key_file: %q, user: root, password_file: %q}", ca.File, cliCert, cliKey, wrongPassword(t, dir)),
			"authentication failed"},
		{"no user", fmt.Sprintf("{ca_file: %q, cert_file: %q, key_file: %q}", ca.File, cliCert, cliKey), "permission denied"},
		{"no client certificate", fmt.Sprintf("{ca_file: %q, user: root, password_file: %q}", ca.File, pwFile), "tls: certificate required"},
		{"not the CA", fmt.Sprintf("{cert_file: %q, key_file: %q, user: root, password_file: %q}", cliCert, cliKey, pwFile), "certificate signed by unknown authority"},
	} {
		began := time.Now()
		err := c.CoordinatorRefused(replica.Options{Config: load(tc.etcd), Etcd: []string{m.ClientURL}})
		t.Logf("step %d: %s: after %v: %v", i, tc.what, time.Since(began).Round(time.Millisecond), err)
		switch {
		case err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "the config's etcd section"):
			t.Errorf("step %d: %s: %v; want it to say %q and point at the etcd section", i, tc.what, err, tc.want)
		case strings.Contains(err.Error(), password) || strings.Contains(err.Error(), "wrong-password"):
			t.Errorf("step %d: %s: the error holds the password: %v", i, tc.what, err)
		}
	}
}

// wrongPassword writes a password file with the wrong password.
func wrongPassword(t *testing.T, dir string) string {
	path := filepath.Join(dir, "wrong.password")
	opstest.Must(t, os.WriteFile(path, []byte("wrong-password-0123"), 0o600))
	return path
}

// TestEmbeddedEtcdURLs: --etcd-client-url and --etcd-peer-url put the
// embedded etcd where they say (its log names the client URL; the peer
// port takes connections); SIGTERM (the context's end) logs a clean
// stop.
func TestEmbeddedEtcdURLs(t *testing.T) {
	client, peer := opstest.FreeAddr(t), opstest.FreeAddr(t)
	c := servicetest.New(t, opstest.ConfigFile("good.yaml"))
	logs := &opstest.Buffer{}
	coord := c.Coordinator(replica.Options{DataDir: t.TempDir(), EtcdClientURL: client, EtcdPeerURL: "http://" + peer,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	opstest.WaitFor(t, "the coordinator leads", func() bool { code, _ := opstest.Readyz(t, coord.URL); return code == 200 })
	if !strings.Contains(logs.String(), "client_url=http://"+client) {
		t.Errorf("the embedded etcd is not on --etcd-client-url %s:\n%s", client, logs)
	}
	conn, err := net.Dial("tcp", peer)
	opstest.Must(t, err)
	conn.Close()
	opstest.Must(t, coord.Stop())
	if !strings.Contains(logs.String(), `msg="quota coordinator: stopped" resigned=true`) {
		t.Errorf("no clean stop logged:\n%s", logs)
	}
}
