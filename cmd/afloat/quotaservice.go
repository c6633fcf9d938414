package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"runtime/debug"
	"strings"

	"github.com/afloat/afloat/internal/hostcheck"
	"github.com/afloat/afloat/quota/agent"
	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/etcdmember"
)

// The processes of the global quota: thin wrappers that parse flags and
// call quota/coordinator/replica, quota/agent and quota/etcdmember.

// splitURLs reads a comma-separated list of URLs (host:port means
// http://host:port), naming the flag in errors.
func splitURLs(flagName, s string) ([]string, error) {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !strings.Contains(part, "://") {
			part = "http://" + part
		}
		u, err := url.Parse(part)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%s: %q: want host:port or http(s)://host:port, comma-separated", flagName, part)
		}
		if _, port, err := net.SplitHostPort(u.Host); err != nil || checkPort(port, 1) != nil {
			return nil, fmt.Errorf("%s: %q: want a port from 1 to 65535", flagName, part)
		}
		out = append(out, part)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: empty: want at least one host:port", flagName)
	}
	return out, nil
}

// hostList is a repeatable flag: --host NAME, once per name.
type hostList []string

func (h *hostList) String() string { return strings.Join(*h, ",") }

func (h *hostList) Set(v string) error {
	*h = append(*h, v)
	return nil
}

func loadQuotaConfig(path string) (*config.Config, error) {
	if path == "" {
		return nil, errors.New("--config FILE is required (YAML or JSON: see docs/quota.md, \"Deployment\")")
	}
	cfg, err := config.LoadConfig(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	return cfg, nil
}

func runQuotaCoordinator(c *command, args []string) int {
	stderr := c.stderr
	var listen, advertise, configPath, etcd, dataDir, eventLog string
	c.StringVar(&listen, "listen", "127.0.0.1:7070", "`ADDR` (host:port) of the coordinator's API for regions")
	c.StringVar(&advertise, "advertise", "", "`URL` regions reach this replica at, told to them by followers (default http://ADDR)")
	c.StringVar(&configPath, "config", "", "the cluster's config `FILE` (YAML or JSON): tenants, regions and their tokens")
	c.StringVar(&etcd, "etcd", "", "etcd client `ENDPOINTS`, comma-separated; without it an embedded single-member etcd runs in --data-dir")
	c.StringVar(&dataDir, "data-dir", "", "`DIR` of the embedded etcd (default "+etcdmember.DefaultDataDir()+")")
	c.StringVar(&eventLog, "event-log", "", "append the event log (JSON lines, t_ns in Unix ns) to `FILE`, for afloat quota check")
	var hosts hostList
	c.Var(&hosts, "host", "a host `NAME` the API answers besides localhost, 127.0.0.1, [::1], --listen's and --advertise's host: what regions and operators call it by (repeat for more)")
	if status, ok := c.parse(args); !ok {
		return status
	}
	fail := c.usage
	if err := checkListenAddr("--listen", listen); err != nil {
		return fail(err)
	}
	if _, err := hostcheck.New(hosts...); err != nil {
		return fail(fmt.Errorf("--host: %w", err))
	}
	cfg, err := loadQuotaConfig(configPath)
	if err != nil {
		return fail(err)
	}
	var endpoints []string
	if etcd != "" {
		if dataDir != "" {
			return fail(errors.New("--etcd and --data-dir: the data directory is the embedded etcd's; give one"))
		}
		if endpoints, err = splitURLs("--etcd", etcd); err != nil {
			return fail(err)
		}
	}
	if advertise != "" {
		if _, err := splitURLs("--advertise", advertise); err != nil {
			return fail(err)
		}
	}
	ctx, stop := interruptible()
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	err = replica.Run(ctx, replica.Options{
		Config: cfg, Listen: listen, Advertise: advertise, Etcd: endpoints, DataDir: dataDir, EventLog: eventLog, Logger: log,
		Hosts: hosts,
	})
	if err != nil {
		fmt.Fprintf(stderr, "afloat quota coordinator: %v\n", err)
		return exitError
	}
	return exitOK
}

func runQuotaRegion(c *command, args []string) int {
	stderr := c.stderr
	var name, coords, listen, configPath, eventLog, grpcListen, upstream, proxyListen string
	c.StringVar(&name, "name", "", "the region's `NAME`, one of the config's regions; one agent per region at a time (a second stands by, not ready, until the first stops)")
	c.StringVar(&coords, "coordinator", "", "the coordinators' `ADDRS` (host:port or URLs, comma-separated); the region follows the leader")
	c.StringVar(&listen, "listen", "127.0.0.1:7080", "`ADDR` (host:port) of the local decision API (POST /v1/allow); a loopback address unless --allow-remote")
	c.StringVar(&configPath, "config", "", "the cluster's config `FILE` (YAML or JSON)")
	c.StringVar(&eventLog, "event-log", "", "append the event log (JSON lines, t_ns in Unix ns) to `FILE`, for afloat quota check")
	c.StringVar(&grpcListen, "grpc-listen", "", "also serve Envoy's rate-limit service (gRPC) on `ADDR` (host:port); needs the config's envoy section")
	c.StringVar(&upstream, "upstream", "", "also run a reverse proxy to `URL` (http or https) that answers 429 + Retry-After; needs the config's proxy section")
	c.StringVar(&proxyListen, "proxy-listen", "", "`ADDR` (host:port) of the reverse proxy (default 127.0.0.1:7090 with --upstream)")
	var hosts hostList
	c.Var(&hosts, "host", "a host `NAME` the decision API answers besides localhost, 127.0.0.1, [::1] and --listen's host: what its clients call it by (repeat for more)")
	allowRemote := c.Bool("allow-remote", false, "allow a --listen address beyond loopback: the decision API has no authentication, so only where just the services it serves can reach it")
	if status, ok := c.parse(args); !ok {
		return status
	}
	fail := c.usage
	if name == "" {
		return fail(errors.New("--name is required"))
	}
	if upstream != "" && proxyListen == "" {
		proxyListen = "127.0.0.1:7090"
	}
	for _, l := range [][2]string{{"--listen", listen}, {"--grpc-listen", grpcListen}, {"--proxy-listen", proxyListen}} {
		if err := checkListenAddr(l[0], l[1]); err != nil {
			return fail(err)
		}
	}
	endpoints, err := splitURLs("--coordinator", coords)
	if err != nil {
		return fail(err)
	}
	cfg, err := loadQuotaConfig(configPath)
	if err != nil {
		return fail(err)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	a, err := agent.New(agent.Options{
		Config: cfg, Name: name, Coordinators: endpoints, Listen: listen, EventLog: eventLog, Logger: log,
		GRPCListen: grpcListen, Upstream: upstream, ProxyListen: proxyListen, Hosts: hosts, AllowRemote: *allowRemote,
	})
	if err != nil {
		return fail(err)
	}
	if os.Getenv("GOGC") == "" {
		// The agent's live heap is small and its garbage per check is a few
		// hundred bytes; collecting at 400 % instead of 100 % makes the
		// collector run a quarter as often, which is most of the decision
		// API's tail (docs/benchmarks.md). GOGC in the environment wins.
		debug.SetGCPercent(agentGCPercent)
	}
	ctx, stop := interruptible()
	defer stop()
	if err := a.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "afloat quota region: %v\n", err)
		return exitError
	}
	return exitOK
}

// agentGCPercent is the region agent's GOGC unless the environment sets one.
const agentGCPercent = 400

// runQuotaEtcd runs one embedded etcd member: the end-to-end test starts
// three, each in a process of its own. Not in the help: the zero-setup
// path is quota coordinator without --etcd, and a real cluster is
// deployed with etcd's own tools.
func runQuotaEtcd(c *command, args []string) int {
	stderr := c.stderr
	var m etcdmember.MemberConfig
	c.StringVar(&m.Name, "name", "afloat", "member `NAME`")
	c.StringVar(&m.DataDir, "data-dir", "", "`DIR` of the member's data")
	c.StringVar(&m.ClientURL, "client-url", "", "`URL` to serve clients on (default: a free loopback port, kept across restarts)")
	c.StringVar(&m.PeerURL, "peer-url", "", "`URL` to serve peers on (default: a free loopback port)")
	c.StringVar(&m.AdvertisePeerURL, "advertise-peer-url", "", "`URL` other members dial (default --peer-url)")
	c.StringVar(&m.AdvertiseClientURL, "advertise-client-url", "", "`URL` clients are told (default --client-url)")
	c.StringVar(&m.InitialCluster, "initial-cluster", "", "`N=URL,...` of a new cluster (default this member alone)")
	c.BoolVar(&m.AllowRemote, "allow-remote", false, "let --client-url and --peer-url listen beyond loopback: the member has no authentication or TLS")
	if status, ok := c.parse(args); !ok {
		return status
	}
	if m.DataDir == "" {
		return c.usage(errors.New("--data-dir is required"))
	}
	ctx, stop := interruptible()
	defer stop()
	if err := etcdmember.RunMember(ctx, m); err != nil {
		fmt.Fprintf(stderr, "afloat quota etcd: %v\n", err)
		return exitError
	}
	return exitOK
}
