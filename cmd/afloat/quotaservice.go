package main

import (
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/afloat/afloat/internal/cli"
	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/agent"
	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/etcdledger"
	"github.com/afloat/afloat/quota/etcdmember"
	"github.com/afloat/afloat/quota/remote"
)

// The processes of the global quota: their flags are the fields of
// replica.Options, agent.Options and etcdmember.MemberConfig, which those
// packages check.

// loadConfig reads --config FILE (config.LoadConfig refuses none).
func loadConfig(path string) (*config.Config, error) {
	cfg, err := config.LoadConfig(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	return cfg, nil
}

func runQuotaCoordinator(c *cli.Command, args []string) int {
	var o replica.Options
	var configPath string
	c.StringVar(&o.Listen, "listen", "127.0.0.1:7070", "`ADDR` (host:port) of the coordinator's API for regions")
	c.StringVar(&o.Advertise, "advertise", "", "`URL` regions reach this replica at, told to them by followers (default http://ADDR)")
	c.StringVar(&configPath, "config", "", "the cluster's config `FILE` (YAML or JSON): tenants, regions and their tokens")
	c.Var((*cli.List)(&o.Etcd), "etcd", "etcd client `ENDPOINTS`, comma-separated; without it an embedded single-member etcd runs in --data-dir")
	c.StringVar(&o.DataDir, "data-dir", "", "`DIR` of the embedded etcd (default "+etcdmember.DefaultDataDir()+")")
	c.StringVar(&o.EtcdClientURL, "etcd-client-url", "", "`URL` (http://host:port, loopback) the embedded etcd serves clients on (default a free port, kept in --data-dir)")
	c.StringVar(&o.EtcdPeerURL, "etcd-peer-url", "", "`URL` (http://host:port, loopback) the embedded etcd serves peers on (default a free port, kept in --data-dir)")
	c.StringVar(&o.EventLog, "event-log", "", "append the event log (JSON lines, t_ns in Unix ns) to `FILE`, for afloat quota check")
	rotationFlags(c, &o.EventLogMaxMB, &o.EventLogKeep)
	c.Var((*cli.Strings)(&o.Hosts), "host", "a host `NAME` the API answers besides localhost, 127.0.0.1, [::1], --listen's and --advertise's host: what regions and operators call it by (repeat for more)")
	c.StringVar(&o.TLSCert, "tls-cert", "", "serve the API over TLS with the certificate in `FILE` (PEM); with --tls-key. Without: plain HTTP, warned of beyond loopback")
	c.StringVar(&o.TLSKey, "tls-key", "", "the private key of --tls-cert, in `FILE` (PEM)")
	c.StringVar(&o.ClientCA, "client-ca", "", "verify the regions' client certificates against the CAs in `FILE` (PEM): one naming the region ("+remote.RegionURI("NAME")+") stands in for its token")
	c.Var((*cli.List)(&o.MetricsTenants), "metrics-tenants", "while leading, export on /metrics the tenants' own series (afloat_quota_coordinator_tenant_…) of `NAMES`, comma-separated, at most 100; the sums over every tenant are exported without it")
	var memoryMB int
	c.IntVar(&memoryMB, "memory-limit-mb", 0, "a soft limit on the process's memory, in `MB` MiB, 64 to 1048576: the collector works harder near it (the Go runtime's GOMEMLIMIT, which sets it without the flag; 0: none)")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	if memoryMB != 0 && (memoryMB < minMemoryMB || memoryMB > maxMemoryMB) {
		return c.Refuse(fmt.Errorf("--memory-limit-mb %d: want %d to %d (MiB), or 0 for none", memoryMB, minMemoryMB, maxMemoryMB))
	}
	if memoryMB != 0 {
		debug.SetMemoryLimit(int64(memoryMB) << 20)
	}
	var err error
	o.Config, err = loadConfig(configPath)
	if pw := os.Getenv(config.EtcdPasswordEnv); err == nil && o.Config.Etcd.Password == "" && pw != "" {
		o.Config.Etcd.Password = config.Secret(pw) // the config's password_file comes first
	}
	o.Logger = slog.New(slog.NewTextHandler(c.Stderr, nil))
	o.ConfigFile = configPath
	hup, stopHup := hangups()
	defer stopHup()
	o.Reload = hup
	if err = cmp.Or(err, o.Validate()); err != nil {
		return c.Refuse(err)
	}
	ctx, stop := cli.Interruptible()
	defer stop()
	return c.Fail(replica.Run(ctx, o))
}

func runQuotaRegion(c *cli.Command, args []string) int {
	var o agent.Options
	var configPath string
	c.StringVar(&o.Name, "name", "", "the region's `NAME`, one of the config's regions; one agent per region at a time (a second stands by, not ready, until the first stops)")
	c.Var((*cli.List)(&o.Coordinators), "coordinator", "the coordinators' `ADDRS` (host:port or URLs, comma-separated); the region follows the leader")
	c.StringVar(&o.Listen, "listen", "127.0.0.1:7080", "`ADDR` (host:port) of the local decision API (POST /v1/allow); a loopback address unless --allow-remote")
	c.StringVar(&configPath, "config", "", "the cluster's config `FILE` (YAML or JSON)")
	c.StringVar(&o.EventLog, "event-log", "", "append the event log (JSON lines, t_ns in Unix ns) to `FILE`, for afloat quota check")
	c.DurationVar(&o.EventLogInterval, "event-log-interval", 0, "count each tenant's decisions in the event log over `D`, 10ms to 10s (0: 1s); the checker's slack is R·D")
	c.BoolVar(&o.EventLogLines, "event-log-lines", false, "write a line for every decision to the event log instead of counts, for audits and tests (about 80 bytes a decision)")
	rotationFlags(c, &o.EventLogMaxMB, &o.EventLogKeep)
	c.StringVar(&o.GRPCListen, "grpc-listen", "", "also serve Envoy's rate-limit service (gRPC) on `ADDR` (host:port); needs the config's envoy section")
	c.StringVar(&o.Upstream, "upstream", "", "also run a reverse proxy to `URL` (http or https) that answers 429 + Retry-After; needs the config's proxy section")
	c.StringVar(&o.ProxyListen, "proxy-listen", "", "`ADDR` (host:port) of the reverse proxy (default "+agent.DefaultProxyListen+" with --upstream)")
	c.Var((*cli.Strings)(&o.Hosts), "host", "a host `NAME` the decision API answers besides localhost, 127.0.0.1, [::1] and --listen's host: what its clients call it by (repeat for more)")
	c.BoolVar(&o.AllowRemote, "allow-remote", false, "allow a --listen address beyond loopback without --client-ca: the decision API then has no authentication, so only where just the services it serves can reach it")
	c.StringVar(&o.TLSCert, "tls-cert", "", "serve the decision API, --grpc-listen and --proxy-listen over TLS with the certificate in `FILE` (PEM); with --tls-key. Without: plain, warned of beyond loopback")
	c.StringVar(&o.TLSKey, "tls-key", "", "the private key of --tls-cert, in `FILE` (PEM)")
	c.StringVar(&o.ClientCA, "client-ca", "", "require of the decision API's and --grpc-listen's clients a certificate signed by the CAs in `FILE` (PEM): mutual TLS")
	c.StringVar(&o.CA, "ca", "", "verify the coordinators' certificates against the CAs in `FILE` (PEM) instead of the system's; --coordinator host:port then means https")
	c.StringVar(&o.ClientCert, "client-cert", "", "present the region's client certificate in `FILE` (PEM) to the coordinators; one naming the region ("+remote.RegionURI("NAME")+") stands in for its token")
	c.StringVar(&o.ClientKey, "client-key", "", "the private key of --client-cert, in `FILE` (PEM)")
	c.Var((*cli.List)(&o.MetricsTenants), "metrics-tenants", "export on /metrics the tenants' own series (afloat_quota_region_tenant_…) of `NAMES`, comma-separated, at most 100; the sums over every tenant are exported without it")
	c.IntVar(&o.MetricsTop, "metrics-top", 0, "also export the own series of the `N` tenants refused the most tokens since the agent started (besides --metrics-tenants), 0 (none) to 100")
	c.StringVar(&o.HandoverFile, "handover-file", "", "on SIGTERM, leave the region's leases to the next agent in `FILE` (mode 0600: it holds the region's hold) instead of ending them; at start, resume from FILE if a previous agent left it: a restart renews every lease without a ledger write")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	var a *agent.Agent
	var err error
	o.Config, err = loadConfig(configPath)
	if pw := os.Getenv(config.EtcdPasswordEnv); err == nil && o.Config.Etcd.Password == "" && pw != "" {
		o.Config.Etcd.Password = config.Secret(pw) // the config's password_file comes first
	}
	o.Logger = slog.New(slog.NewTextHandler(c.Stderr, nil))
	o.ConfigFile = configPath
	hup, stopHup := hangups()
	defer stopHup()
	o.Reload = hup
	if err == nil {
		a, err = agent.New(o)
	}
	if err != nil {
		return c.Refuse(err)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(agent.GCPercent)
	}
	ctx, stop := cli.Interruptible()
	defer stop()
	return c.Fail(a.Run(ctx))
}

// The range of --memory-limit-mb: a coordinator's heap is tens of MiB
// with a few tenants, and no limit above a TiB means anything.
const (
	minMemoryMB = 64
	maxMemoryMB = 1 << 20
)

// hangups delivers SIGHUP, on which the quota's processes read their
// config file and certificates again (tokens rotate without a restart).
// A signal that comes while one is being handled is merged with it.
func hangups() (<-chan struct{}, func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGHUP)
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-sig:
				select {
				case out <- struct{}{}:
				default: // one is pending already
				}
			case <-done:
				return
			}
		}
	}()
	return out, func() { signal.Stop(sig); close(done) }
}

// rotationFlags are the event log's rotation flags, which the
// coordinator and the region share (ops.CheckRotation checks them).
func rotationFlags(c *cli.Command, maxMB, keep *int) {
	c.IntVar(maxMB, "event-log-max-mb", 256, "rotate the event log at `MB` MiB, 1 to 1048576 (0: never); afloat quota check reads the rotated files with it")
	c.IntVar(keep, "event-log-keep", 16, "keep `N` rotated event-log files, 1 to 10000 (the oldest go; a check needs them all)")
}

// runQuotaEtcd runs one embedded etcd member: three, each in a process
// of its own, are a cluster, as the end-to-end test starts them and
// docs/quota/operations.md ("An etcd cluster of afloat's own") walks
// through.
func runQuotaEtcd(c *cli.Command, args []string) int {
	var m etcdmember.MemberConfig
	c.StringVar(&m.Name, "name", "afloat", "member `NAME`")
	c.StringVar(&m.DataDir, "data-dir", "", "`DIR` of the member's data")
	c.StringVar(&m.ClientURL, "client-url", "", "`URL` to serve clients on (default: a free loopback port, kept across restarts)")
	c.StringVar(&m.PeerURL, "peer-url", "", "`URL` to serve peers on (default: a free loopback port)")
	c.StringVar(&m.AdvertisePeerURL, "advertise-peer-url", "", "`URL` other members dial (default --peer-url)")
	c.StringVar(&m.AdvertiseClientURL, "advertise-client-url", "", "`URL` clients are told (default --client-url)")
	c.StringVar(&m.InitialCluster, "initial-cluster", "", "`N=URL,...` of a new cluster (default this member alone)")
	c.BoolVar(&m.AllowRemote, "allow-remote", false, "let --client-url and --peer-url listen beyond loopback: peers speak plain HTTP, and clients too without --tls-cert, --client-ca and --root-password-file")
	c.StringVar(&m.CertFile, "tls-cert", "", "serve clients over TLS with the certificate in `FILE` (PEM); --client-url is then https")
	c.StringVar(&m.KeyFile, "tls-key", "", "the private key of --tls-cert, in `FILE` (PEM)")
	c.StringVar(&m.ClientCAFile, "client-ca", "", "require of clients a certificate signed by the CAs in `FILE` (PEM)")
	var rootPasswordFile string
	c.StringVar(&rootPasswordFile, "root-password-file", "", "turn etcd's authentication on, with the user root's password in `FILE` (0600)")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	if rootPasswordFile != "" {
		// The quota's rule for secret files: 0600 or 0400, as a token's.
		pw, err := config.ReadTokenFile("--root-password-file", rootPasswordFile)
		if err != nil {
			return c.Refuse(err)
		}
		m.RootPassword = pw
	}
	m.OnReady = func(clientURL string) {
		fmt.Fprintf(c.Stdout, "afloat quota etcd: member %s ready, clients on %s, data in %s\n", m.Name, clientURL, m.DataDir)
	}
	ctx, stop := cli.Interruptible()
	defer stop()
	return c.Fail(etcdmember.RunMember(ctx, m), etcdmember.ErrConfig)
}

// ledgerFlags are the flags quota backup and quota restore share: where
// the ledger's etcd is, as quota coordinator has them.
func ledgerFlags(c *cli.Command, o *replica.Options, configPath *string) {
	c.StringVar(configPath, "config", "", "the cluster's config `FILE` (YAML or JSON): its etcd section and cluster name")
	c.Var((*cli.List)(&o.Etcd), "etcd", "etcd client `ENDPOINTS`, comma-separated; without it the embedded etcd in --data-dir (its coordinator stopped)")
	c.StringVar(&o.DataDir, "data-dir", "", "`DIR` of the embedded etcd (default "+etcdmember.DefaultDataDir()+")")
}

// ledgerOptions are the options of quota backup and quota restore, read
// from their flags.
func ledgerOptions(c *cli.Command, o *replica.Options, configPath string) error {
	var err error
	o.Config, err = loadConfig(configPath)
	if pw := os.Getenv(config.EtcdPasswordEnv); err == nil && o.Config.Etcd.Password == "" && pw != "" {
		o.Config.Etcd.Password = config.Secret(pw) // the config's password_file comes first
	}
	o.Logger = slog.New(slog.NewTextHandler(c.Stderr, nil))
	o.Listen = "127.0.0.1:0" // serves nothing: the options' check wants one
	return err
}

// required refuses a flag left empty.
func required(flag, v string) error {
	if v == "" {
		return fmt.Errorf("%s: want a file", flag)
	}
	return nil
}

func runQuotaBackup(c *cli.Command, args []string) int {
	var (
		o               replica.Options
		configPath, out string
	)
	ledgerFlags(c, &o, &configPath)
	c.StringVar(&out, "out", "", "write the snapshot to `FILE` (created; not overwritten)")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	if err := cmp.Or(ledgerOptions(c, &o, configPath), required("--out", out)); err != nil {
		return c.Refuse(err)
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return c.Refuse(fmt.Errorf("--out: %w", err))
	}
	ctx, stop := cli.Interruptible()
	defer stop()
	n, err := replica.Backup(ctx, o, f)
	if err = cmp.Or(err, f.Sync(), f.Close()); err != nil {
		os.Remove(out)
		return c.Fail(err, replica.ErrOptions)
	}
	return verdict(c, "backup", map[string]any{"file": out, "bytes": n}, true)
}

func runQuotaRestore(c *cli.Command, args []string) int {
	var (
		o                    replica.Options
		configPath, snapshot string
		wait                 time.Duration
	)
	ledgerFlags(c, &o, &configPath)
	c.StringVar(&snapshot, "snapshot", "", "the etcd snapshot `FILE` (quota backup's or etcdctl snapshot save's)")
	c.DurationVar(&wait, "wait", 0, "the longest lease duration and skew margin of any tenant since the snapshot, `D` from 0 to 24h, if longer than the ledger's (0: the ledger's)")
	if status, ok := c.ParseFlags(args); !ok {
		return status
	}
	if err := cmp.Or(ledgerOptions(c, &o, configPath), required("--snapshot", snapshot)); err != nil {
		return c.Refuse(err)
	}
	ctx, stop := cli.Interruptible()
	defer stop()
	rep, err := replica.Restore(ctx, o, snapshot, wait)
	if err != nil {
		return c.Fail(err, replica.ErrOptions, quota.ErrConfig, etcdledger.ErrSnapshot, etcdledger.ErrForeign)
	}
	return verdict(c, "restore", rep, true)
}
