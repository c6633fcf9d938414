package replica_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/afloat/afloat/internal/hostcheck"
	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/remote"
)

// TestOptionsValidate: Validate, and Run before anything starts, refuse
// the options a replica cannot run with, each refusal wrapping ErrOptions
// and naming the option by its flag and what it wants.
func TestOptionsValidate(t *testing.T) {
	cfg := opstest.MustConfig(t, opstest.ConfigFile("good.yaml"))
	certOnly := opstest.MustConfig(t, strings.Replace(opstest.ConfigFile("good.yaml"), `eu: {token: "eu-token-0123456789"}`, `eu: {}`, 1))
	for i, tc := range []struct {
		edit func(o *replica.Options)
		want string // "" for none
		also error  // another sentinel the refusal wraps
	}{
		{func(o *replica.Options) {}, "", nil},
		{func(o *replica.Options) { o.Etcd = []string{"127.0.0.1:2379", "https://etcd:2379/"} }, "", nil},
		{func(o *replica.Options) { o.Advertise = "quota.internal:7070" }, "", nil},
		{func(o *replica.Options) { o.Config = nil }, "replica: invalid options: --config: want the cluster's config (YAML or JSON", nil},
		{func(o *replica.Options) { o.Logger = nil }, "replica: invalid options: a logger is required", nil},
		{func(o *replica.Options) { o.Listen = "127.0.0.1:70000" }, `--listen "127.0.0.1:70000": port 70000: want 0 to 65535 (0: any free port)`, nil},
		{func(o *replica.Options) { o.Hosts = []string{"http://quota.internal"} }, `--host: hostcheck: invalid host name: "http://quota.internal"`, hostcheck.ErrName},
		{func(o *replica.Options) { o.Advertise = "ftp://quota.internal:1" }, `--advertise: "ftp://quota.internal:1": want host:port or http(s)://host:port`, remote.ErrEndpoint},
		{func(o *replica.Options) { o.Advertise = "http://quota.internal" }, `--advertise: "http://quota.internal": want a port from 1 to 65535`, remote.ErrEndpoint},
		{func(o *replica.Options) { o.Etcd = []string{"127.0.0.1:99999"} }, `--etcd: "http://127.0.0.1:99999": want a port from 1 to 65535`, remote.ErrEndpoint},
		{func(o *replica.Options) { o.Etcd, o.DataDir = []string{"a:1"}, "x" }, "--etcd and --data-dir: the data directory is the embedded etcd's; give one", nil},
		{func(o *replica.Options) { o.TLSKey = "key.pem" }, "--tls-cert and --tls-key: give both", nil},
		{func(o *replica.Options) { o.ClientCA = "ca.pem" }, "--client-ca: needs --tls-cert and --tls-key", nil},
		{func(o *replica.Options) { o.TLSCert, o.TLSKey = "/nonexistent/cert.pem", "/nonexistent/key.pem" }, "--tls-cert /nonexistent/cert.pem, --tls-key /nonexistent/key.pem: open", nil},
		{func(o *replica.Options) { o.EtcdClientURL, o.EtcdPeerURL = "127.0.0.1:2379", "http://[::1]:2380" }, "", nil},
		{func(o *replica.Options) { o.EtcdClientURL, o.Etcd = "127.0.0.1:2379", []string{"a:1"} }, "--etcd and --etcd-client-url: the URL is the embedded etcd's; give one", nil},
		{func(o *replica.Options) { o.EtcdPeerURL = "127.0.0.1:99999" }, `--etcd-peer-url: "http://127.0.0.1:99999": want a port from 1 to 65535`, remote.ErrEndpoint},
		{func(o *replica.Options) { o.EtcdClientURL = "https://127.0.0.1:2379" }, `--etcd-client-url "https://127.0.0.1:2379": want http://host:port`, nil},
		{func(o *replica.Options) { o.EtcdClientURL = "10.0.0.5:2379" }, `--etcd-client-url "10.0.0.5:2379": beyond loopback`, nil},
		{func(o *replica.Options) { o.EtcdClientURL, o.EtcdPeerURL = "127.0.0.1:2379", "127.0.0.1:2379" }, "--etcd-client-url and --etcd-peer-url: both http://127.0.0.1:2379: want two ports", nil},
		{func(o *replica.Options) { o.Config = certOnly }, "--config: regions.eu has no token: it could authenticate only with a client certificate; give --client-ca", nil},
	} {
		o := replica.Options{Config: cfg, Listen: "127.0.0.1:0", Logger: opstest.QuietLog()}
		tc.edit(&o)
		err := o.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (!errors.Is(err, replica.ErrOptions) || !strings.Contains(err.Error(), tc.want) ||
			tc.also != nil && !errors.Is(err, tc.also)) {
			t.Errorf("step %d: Validate: %v; want %q", i, err, tc.want)
		}
		if tc.want != "" {
			if err := replica.Run(context.Background(), o); !errors.Is(err, replica.ErrOptions) {
				t.Errorf("step %d: Run: %v; want the same refusal", i, err)
			}
		}
	}
}
