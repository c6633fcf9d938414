package scale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Cluster is the quota's processes: etcd's members, the coordinator
// replicas and a region agent per region. New builds it; Start starts it.
type Cluster struct {
	cfg Config

	// Etcd are the members (m0, m1, m2) and EtcdURLs their client URLs.
	Etcd     []*Process
	EtcdURLs []string
	// Coordinators are the replicas and CoordinatorURLs their APIs.
	Coordinators    []*Process
	CoordinatorURLs []string
	// Agents are the region agents, in Config.Regions's order, and
	// AgentURLs their decision APIs.
	Agents    []*Process
	AgentURLs []string
	// ConfigFile is the generated config every coordinator and agent reads.
	ConfigFile string

	http          *http.Client
	agentsStarted time.Time
}

// The bounds of the waits at start: etcd's members healthy, every
// coordinator serving and one leading (a leader first loads the ledger,
// which at 100,000 tenants is large), every agent serving its API.
const (
	etcdStartBound        = 60 * time.Second
	coordinatorStartBound = 3 * time.Minute
	agentStartBound       = 60 * time.Second
)

// New writes the config file into cfg.Dir and prepares the processes on
// free loopback ports; it starts nothing.
func New(cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, ConfigFile: filepath.Join(cfg.Dir, cfg.ConfigName()),
		http: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}}
	if err := cfg.writeQuotaFile(c.ConfigFile); err != nil {
		return nil, err
	}
	addrs := make([]string, 6+cfg.Coordinators+len(cfg.Regions))
	for i := range addrs {
		a, err := freeAddr()
		if err != nil {
			return nil, err
		}
		addrs[i] = a
	}
	c.build(addrs)
	return c, nil
}

// build lays the processes out on addrs, one each for every listener.
func (c *Cluster) build(addrs []string) {
	cfg := c.cfg
	addr := func() string {
		a := addrs[0]
		addrs = addrs[1:]
		return a
	}
	log := func(name string) string { return filepath.Join(cfg.Dir, name+".stderr") }
	var initial, peers []string
	for i := range 3 {
		peers = append(peers, "http://"+addr())
		c.EtcdURLs = append(c.EtcdURLs, "http://"+addr())
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peers[i]))
	}
	for i := range 3 {
		name := fmt.Sprintf("m%d", i)
		args := []string{"--name", name, "--data-dir", filepath.Join(cfg.Dir, "etcd-"+name),
			"--listen-client-urls", c.EtcdURLs[i], "--advertise-client-urls", c.EtcdURLs[i],
			"--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "afloat-scale"}
		if cfg.MaxTxnOps != 0 {
			args = append(args, "--max-txn-ops", strconv.Itoa(cfg.MaxTxnOps))
		}
		c.Etcd = append(c.Etcd, &Process{Name: "etcd " + name, Log: log("etcd-" + name), bin: cfg.Etcd, args: args})
	}
	for k := range cfg.Coordinators {
		a := addr()
		c.CoordinatorURLs = append(c.CoordinatorURLs, "http://"+a)
		args := []string{"quota", "coordinator", "--listen", a, "--config", c.ConfigFile, "--etcd", strings.Join(c.EtcdURLs, ",")}
		if cfg.EventLogs {
			args = append(args, "--event-log", filepath.Join(cfg.Dir, fmt.Sprintf("coordinator-%d.jsonl", k)))
		}
		if cfg.CoordinatorMemoryMB != 0 {
			args = append(args, "--memory-limit-mb", strconv.Itoa(cfg.CoordinatorMemoryMB))
		}
		name := fmt.Sprintf("coordinator-%d", k)
		c.Coordinators = append(c.Coordinators, &Process{Name: fmt.Sprintf("coordinator %d", k), Log: log(name), bin: cfg.Afloat, args: args})
	}
	for _, r := range cfg.Regions {
		a := addr()
		c.AgentURLs = append(c.AgentURLs, "http://"+a)
		args := []string{"quota", "region", "--name", r, "--coordinator", strings.Join(c.CoordinatorURLs, ","),
			"--listen", a, "--config", c.ConfigFile}
		if cfg.EventLogs {
			args = append(args, "--event-log", filepath.Join(cfg.Dir, "region-"+r+".jsonl"))
		}
		if cfg.Handover {
			args = append(args, "--handover-file", filepath.Join(cfg.Dir, "region-"+r+".handover"))
		}
		c.Agents = append(c.Agents, &Process{Name: "region " + r, Log: log("region-" + r), bin: cfg.Afloat, args: args})
	}
}

// Config is the cluster's config.
func (c *Cluster) Config() Config { return c.cfg }

// Pairs is how many tenant–region pairs the cluster serves: every
// tenant in every region.
func (c *Cluster) Pairs() int { return c.cfg.Tenants * len(c.cfg.Regions) }

// EventLogs are the event logs of every coordinator and agent (with
// Config.EventLogs).
func (c *Cluster) EventLogs() []string {
	var out []string
	for _, p := range append(append([]*Process{}, c.Coordinators...), c.Agents...) {
		for i, a := range p.args {
			if a == "--event-log" && i+1 < len(p.args) {
				out = append(out, p.args[i+1])
			}
		}
	}
	return out
}

// Processes are every process of the cluster: etcd's members, the
// coordinators, the agents.
func (c *Cluster) Processes() []*Process {
	return append(append(append([]*Process{}, c.Etcd...), c.Coordinators...), c.Agents...)
}

// Start starts etcd, then the coordinators, then the agents, each
// waited for (StartEtcd, StartCoordinators, StartAgents).
func (c *Cluster) Start(ctx context.Context) error {
	if err := c.StartEtcd(ctx); err != nil {
		return err
	}
	if err := c.StartCoordinators(ctx); err != nil {
		return err
	}
	return c.StartAgents(ctx)
}

// StartEtcd starts every member and waits until each answers healthy.
func (c *Cluster) StartEtcd(ctx context.Context) error {
	for _, p := range c.Etcd {
		if err := p.Start(); err != nil {
			return err
		}
	}
	return c.WaitEtcd(ctx)
}

// WaitEtcd waits until every member answers GET /health healthy.
func (c *Cluster) WaitEtcd(ctx context.Context) error {
	return c.waitFor(ctx, "every etcd member healthy", etcdStartBound, c.Etcd, func() bool {
		for _, u := range c.EtcdURLs {
			body, code, err := c.get(ctx, u+"/health")
			if err != nil || code != 200 || !strings.Contains(string(body), `"health":"true"`) {
				return false
			}
		}
		return true
	})
}

// StartCoordinators starts every replica and waits until each serves
// and one leads.
func (c *Cluster) StartCoordinators(ctx context.Context) error {
	for _, p := range c.Coordinators {
		if err := p.Start(); err != nil {
			return err
		}
	}
	return c.waitFor(ctx, "every coordinator serving, one leading", coordinatorStartBound, c.Coordinators, func() bool {
		for _, u := range c.CoordinatorURLs {
			if _, _, err := c.get(ctx, u+"/healthz"); err != nil {
				return false
			}
		}
		return c.leader(ctx) >= 0
	})
}

// StartAgents starts every region agent and waits until each serves its
// API; AgentsStarted is when the first was started.
func (c *Cluster) StartAgents(ctx context.Context) error {
	c.agentsStarted = time.Now()
	for _, p := range c.Agents {
		if err := p.Start(); err != nil {
			return err
		}
	}
	return c.waitServing(ctx, c.Agents, c.AgentURLs, agentStartBound)
}

// AgentsStarted is when StartAgents started the agents.
func (c *Cluster) AgentsStarted() time.Time { return c.agentsStarted }

// waitServing waits until each of procs answers GET /healthz at its URL.
func (c *Cluster) waitServing(ctx context.Context, procs []*Process, urls []string, bound time.Duration) error {
	var names []string
	for _, p := range procs {
		names = append(names, p.Name)
	}
	return c.waitFor(ctx, strings.Join(names, ", ")+" serving", bound, procs, func() bool {
		for _, u := range urls {
			if _, code, err := c.get(ctx, u+"/healthz"); err != nil || code != 200 {
				return false
			}
		}
		return true
	})
}

// waitFor polls ok every 100 ms for at most bound; a process of watch
// that exits meanwhile ends the wait with the end of its output.
func (c *Cluster) waitFor(ctx context.Context, what string, bound time.Duration, watch []*Process, ok func() bool) error {
	deadline := time.Now().Add(bound)
	for !ok() {
		for _, p := range watch {
			if !p.Running() {
				return fmt.Errorf("scale: waiting for %s: %s exited; its output ends:\n%s", what, p.Name, Tail(p.Log, 2000))
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("scale: %s: not within %v (the processes' output is in %s)", what, bound, c.cfg.Dir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// get is GET url: the body (up to 1 MiB), the status.
func (c *Cluster) get(ctx context.Context, url string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return body, resp.StatusCode, err
}

// Leader is the index of the coordinator whose GET /readyz says it
// leads, waited for up to bound; −1 and an error if none does by then.
func (c *Cluster) Leader(ctx context.Context, bound time.Duration) (int, error) {
	k := -1
	err := c.waitFor(ctx, "a leading coordinator", bound, nil, func() bool {
		k = c.leader(ctx)
		return k >= 0
	})
	return k, err
}

func (c *Cluster) leader(ctx context.Context) int {
	for k, u := range c.CoordinatorURLs {
		if !c.Coordinators[k].Running() {
			continue
		}
		body, _, err := c.get(ctx, u+"/readyz")
		if err != nil {
			continue
		}
		var rd struct {
			Role string `json:"role"`
		}
		if json.Unmarshal(body, &rd) == nil && rd.Role == "leader" {
			return k
		}
	}
	return -1
}

// Stop stops every process with SIGTERM — the agents (which give their
// leases back), the coordinators, etcd — each given grace to end before
// it is killed; the error names each that was.
func (c *Cluster) Stop(grace time.Duration) error {
	var errs []error
	stopAll := func(procs []*Process) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, p := range procs {
			wg.Go(func() {
				if err := p.Term(grace); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	stopAll(c.Agents)
	stopAll(c.Coordinators)
	stopAll(c.Etcd)
	return errors.Join(errs...)
}

// Kill kills every process (kill -9): what a harness does when it must
// end now.
func (c *Cluster) Kill() {
	for _, p := range c.Processes() {
		p.Kill()
	}
}

// Tail is the last n bytes of the file at path, for a failure's message.
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	off := max(0, st.Size()-int64(n))
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
		return err.Error()
	}
	return string(b)
}
