package agent

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/internal/hostcheck"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/remote"
)

// TestOptionsRefused: New refuses options it cannot run with before
// anything starts, each refusal wrapping ErrOptions and naming the option
// by its flag and what it wants; the coordinators come out in one form.
func TestOptionsRefused(t *testing.T) {
	cfg := opstest.MustConfig(t, good)
	for i, tc := range []struct {
		edit func(o *Options)
		want string
		also error // another sentinel the refusal wraps
	}{
		{func(o *Options) { o.Config = nil }, "agent: invalid options: --config: want the cluster's config (YAML or JSON", nil},
		{func(o *Options) { o.Logger = nil }, "agent: invalid options: a logger is required", nil},
		{func(o *Options) { o.Name = "" }, `agent: invalid options: --name "": not in the config's regions: want one of eu, us`, nil},
		{func(o *Options) { o.Name = "mars" }, `--name "mars": not in the config's regions: want one of eu, us`, nil},
		{func(o *Options) { o.Coordinators = nil }, "--coordinator: empty: want at least one host:port", remote.ErrEndpoint},
		{func(o *Options) { o.Coordinators = []string{"ftp://a:1"} }, `--coordinator: "ftp://a:1": want host:port or http(s)://host:port`, remote.ErrEndpoint},
		{func(o *Options) { o.Coordinators = []string{"a:1", "b:0"} }, `--coordinator: "http://b:0": want a port from 1 to 65535`, remote.ErrEndpoint},
		{func(o *Options) { o.Listen = "127.0.0.1:70000" }, `--listen "127.0.0.1:70000": port 70000: want 0 to 65535 (0: any free port)`, nil},
		{func(o *Options) { o.GRPCListen = "127.0.0.1:-1" }, `--grpc-listen "127.0.0.1:-1": port -1: want 0 to 65535`, nil},
		{func(o *Options) { o.Upstream, o.ProxyListen = "http://127.0.0.1:1", "127.0.0.1:65536" }, `--proxy-listen "127.0.0.1:65536": port 65536`, nil},
		{func(o *Options) { o.Hosts = []string{"http://quota.internal"} }, `--host: hostcheck: invalid host name: "http://quota.internal"`, hostcheck.ErrName},
		{func(o *Options) { o.EventLogInterval = 5 * time.Millisecond }, "--event-log-interval 5ms: want 10ms to 10s (0: 1s)", nil},
		{func(o *Options) { o.EventLogInterval = time.Minute }, "--event-log-interval 1m0s: want 10ms to 10s", nil},
		{func(o *Options) { o.EventLogLines, o.EventLogInterval = true, time.Second }, "--event-log-interval 1s: not with --event-log-lines", nil},
		{func(o *Options) { o.EventLogMaxMB = -1 }, "--event-log-max-mb -1: want 0 (never rotate) or 1 to 1048576 MiB", nil},
		{func(o *Options) { o.EventLogMaxMB = 1 << 21 }, "--event-log-max-mb 2097152: want 0 (never rotate) or 1 to 1048576 MiB", nil},
		{func(o *Options) { o.EventLogMaxMB, o.EventLogKeep = 64, 0 }, "--event-log-keep 0: want 1 to 10000 rotated files", nil},
		{func(o *Options) { o.TLSCert = "cert.pem" }, "--tls-cert and --tls-key: give both", nil},
		{func(o *Options) { o.ClientCA = "ca.pem" }, "--client-ca: needs --tls-cert and --tls-key", nil},
		{func(o *Options) { o.TLSCert, o.TLSKey = "/nonexistent/cert.pem", "/nonexistent/key.pem" }, "--tls-cert /nonexistent/cert.pem, --tls-key /nonexistent/key.pem: open", nil},
		{func(o *Options) { o.ClientCert = "cert.pem" }, "--client-cert and --client-key: give both", nil},
		{func(o *Options) { o.CA = "/nonexistent/ca.pem" }, "--ca: open /nonexistent/ca.pem", nil},
	} {
		o := Options{Config: cfg, Name: "eu", Coordinators: []string{"127.0.0.1:1"}, Listen: "127.0.0.1:0", Logger: opstest.QuietLog()}
		tc.edit(&o)
		_, err := New(o)
		if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tc.want) || tc.also != nil && !errors.Is(err, tc.also) {
			t.Errorf("step %d: New: %v; want ErrOptions naming %q", i, err, tc.want)
		}
	}
	a, err := New(Options{Config: cfg, Name: "eu", Coordinators: []string{"127.0.0.1:1", "https://b:2/"}, Listen: "127.0.0.1:0", Logger: opstest.QuietLog()})
	if err != nil || !slices.Equal(a.o.Coordinators, []string{"http://127.0.0.1:1", "https://b:2"}) {
		t.Fatalf("New: %v; coordinators %q, want them as base URLs", err, a.o.Coordinators)
	}
}
