package servicetest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/agent"
	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/etcdmember"
	"github.com/afloat/afloat/quota/eventlog"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/remote"
)

// StartTimeout bounds how long a process may take to serve: an embedded
// etcd member on a loaded machine takes seconds, never a minute.
const StartTimeout = 60 * time.Second

// Cluster is a quota cluster inside one test: an embedded etcd member,
// started on first need, coordinator replicas and region agents, each on
// a free loopback port, their data directories and event logs in the
// test's temporary directory. The test's cleanup stops them all, agents
// first, and waits for them. Its methods are called from the test's
// goroutine.
type Cluster struct {
	// Config is the cluster's config file, given to every process.
	Config *config.Config
	// Dir is the cluster's folder (the test's temporary directory).
	Dir string
	// Log receives the processes' logs; default discarded.
	Log *slog.Logger
	// NoEventLogs starts the processes without event logs, for a
	// benchmark that measures the decision path without the log's writes;
	// Check then has nothing to read. Set it before starting any.
	NoEventLogs bool
	// ClientTLS, if not nil, is the TLS config of the cluster's own
	// clients (Agent.Load, Client): the CA of processes started with
	// TLSCert, and the client certificate agents started with ClientCA
	// require.
	ClientTLS *tls.Config

	t      testing.TB
	ctx    context.Context
	cancel context.CancelFunc
	member *etcdmember.Member
	procs  sync.WaitGroup
	agents sync.WaitGroup
	loads  sync.WaitGroup // Agent.Load's
	logs   []string
	// coordinators are the URLs of the coordinators started.
	coordinators []string
	n            int // processes started, to name their files
}

// New returns an empty cluster on cfg, a config file's contents, which
// must parse (a test that checks a bad file calls config.ParseConfig
// itself). Nothing runs until the test starts it.
func New(t testing.TB, cfg string) *Cluster {
	t.Helper()
	c := &Cluster{Config: opstest.MustConfig(t, cfg), Dir: t.TempDir(), Log: opstest.QuietLog(), t: t}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() {
		c.cancel()
		c.loads.Wait()
		c.agents.Wait() // an agent gives its leases back to a coordinator still up
		c.procs.Wait()
		if c.member != nil {
			c.member.Close()
		}
	})
	return c
}

// Etcd returns the client URL of the cluster's embedded etcd member,
// starting it on the first call. The test is skipped in a binary built
// without the tag embedetcd.
func (c *Cluster) Etcd() string {
	c.t.Helper()
	if c.member == nil {
		if !etcdmember.EmbeddedEtcd {
			c.t.Skip("servicetest: an embedded etcd member needs -tags embedetcd")
		}
		m, err := etcdmember.StartMember(c.ctx, etcdmember.MemberConfig{Name: "servicetest", DataDir: filepath.Join(c.Dir, "etcd")})
		if err != nil {
			c.t.Fatalf("servicetest: etcd: %v", err)
		}
		c.member = m
	}
	return c.member.ClientURL
}

// Process is a coordinator replica or a region agent the cluster runs.
type Process struct {
	// Addr is the address its API serves on (host:port); URL is
	// http://Addr, or https://Addr for a process started with TLSCert.
	Addr, URL string
	// EventLog is the path of its event log.
	EventLog string

	cancel context.CancelFunc
	done   chan struct{}
	err    error
	scheme string // http or https
}

// Stop stops the process and waits for it to end; it returns what its
// run returned. Stopping twice is stopping once.
func (p *Process) Stop() error {
	p.cancel()
	<-p.done
	return p.err
}

// Done is closed once the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Coordinator starts a coordinator replica and returns once its API
// serves. Fields of o left zero are the cluster's: its config and log,
// a free loopback port, an event log in Dir, and the cluster's etcd
// member unless o names Etcd endpoints or a DataDir (then the replica
// starts an embedded member of its own there, as afloat quota coordinator
// does without --etcd). An error from the run after it served fails the
// test, unless the test stopped it (Process.Stop returns it).
func (c *Cluster) Coordinator(o replica.Options) *Process {
	c.t.Helper()
	c.defaults(&o.Config, &o.Logger, &o.Listen, &o.EventLog, "coordinator")
	if len(o.Etcd) == 0 && o.DataDir == "" {
		o.Etcd = []string{c.Etcd()}
	}
	p := c.process(o.EventLog)
	if o.TLSCert != "" {
		p.scheme = "https"
	}
	user := o.Ready
	ready := make(chan string, 1)
	o.Ready = func(addr string) {
		if user != nil {
			user(addr)
		}
		ready <- addr
	}
	ctx := c.start(p, &c.procs)
	go func() {
		defer close(p.done)
		p.err = replica.Run(ctx, o)
		c.report(ctx, "coordinator", p.err)
	}()
	c.await(p, ready, "coordinator")
	c.coordinators = append(c.coordinators, p.URL)
	return p
}

// CoordinatorRefused runs a coordinator replica that must not serve — on
// a data directory another holds, with options it refuses — and returns
// the error its run ended with. Fields of o left zero are filled as
// Coordinator fills them, but its event log is not one Check reads. One
// that serves after all is stopped, and fails the test.
func (c *Cluster) CoordinatorRefused(o replica.Options) error {
	c.t.Helper()
	c.defaults(&o.Config, &o.Logger, &o.Listen, &o.EventLog, "refused")
	if len(o.Etcd) == 0 && o.DataDir == "" {
		o.Etcd = []string{c.Etcd()}
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	served := make(chan string, 1)
	o.Ready = func(addr string) { served <- addr }
	done := make(chan error, 1)
	go func() { done <- replica.Run(ctx, o) }()
	select {
	case err := <-done:
		return err
	case addr := <-served:
		cancel()
		<-done
		c.t.Fatalf("servicetest: a coordinator that was to be refused served on %s", addr)
	case <-time.After(StartTimeout):
		cancel()
		<-done
		c.t.Fatalf("servicetest: a coordinator that was to be refused still ran after %v", StartTimeout)
	}
	return nil
}

// MemoryCoordinator starts a coordinator on a ledger in memory
// (coordinator.NewMemLedger) — no etcd, no election, no event log —
// serving the regions' API (quota/remote) on a free loopback port, and
// returns once it serves. For a test or benchmark of an agent that needs
// leases but not the coordinator process: it runs in a binary built
// without the tag embedetcd.
func (c *Cluster) MemoryCoordinator() *Process {
	c.t.Helper()
	p := c.process("")
	ctx := c.start(p, &c.procs)
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: c.Config.QuotaTenants()}, coordinator.NewMemLedger())
	if err != nil {
		close(p.done) // ends it for the cluster's cleanup
		c.t.Fatalf("servicetest: memory coordinator: %v", err)
	}
	h, err := remote.Handler(remote.HandlerConfig{Tokens: c.Config.Tokens(), Lead: func() (remote.Backend, string) { return srv, "" }})
	if err != nil {
		close(p.done) // ends it for the cluster's cleanup
		c.t.Fatalf("servicetest: memory coordinator: %v", err)
	}
	c.serve(ctx, p, "memory coordinator", h, srv.Run)
	return p
}

// DownCoordinator starts a coordinator that answers every call 503, as
// one without a leader does, on a free loopback port: an agent renewing
// through it serves, but holds no lease.
func (c *Cluster) DownCoordinator() *Process {
	c.t.Helper()
	p := c.process("")
	ctx := c.start(p, &c.procs)
	c.serve(ctx, p, "down coordinator", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "servicetest: down", http.StatusServiceUnavailable)
	}), nil)
	return p
}

// serve serves h for p on a free loopback port until ctx ends, and run,
// if not nil, beside it; p is a coordinator of the cluster.
func (c *Cluster) serve(ctx context.Context, p *Process, who string, h http.Handler, run func(context.Context) error) {
	c.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		close(p.done) // ends it for the cluster's cleanup
		c.t.Fatalf("servicetest: %s: %v", who, err)
	}
	hs := &http.Server{Handler: h}
	go func() {
		defer close(p.done)
		var wg sync.WaitGroup
		if run != nil {
			wg.Go(func() {
				if err := run(ctx); ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
					p.err = err // not the end the cluster or Stop asked for
				}
			})
		}
		wg.Go(func() {
			<-ctx.Done()
			hs.Close()
		})
		hs.Serve(ln) //nolint:errcheck // ErrServerClosed, once ctx ends
		wg.Wait()
		c.report(ctx, who, p.err)
	}()
	p.Addr = ln.Addr().String()
	p.URL = "http://" + p.Addr
	c.coordinators = append(c.coordinators, p.URL)
}

// Agent is a region agent the cluster runs.
type Agent struct {
	*agent.Agent
	*Process // shared with the goroutine that runs it: Stop returns what its run did

	cluster *Cluster
}

// Agent builds a region agent with agent.New, starts it, and returns once
// its decision API serves. Fields of o left zero are the cluster's: its
// config and log, a free loopback port, an event log in Dir — a line for
// every decision, unless o.EventLogInterval asks for counts — and as
// coordinators the URLs of every coordinator the cluster started.
// Setup, if not nil, is called with the agent before it runs (for a
// test's own hooks, set through the package's export_test.go).
func (c *Cluster) Agent(o agent.Options, setup func(*agent.Agent)) *Agent {
	c.t.Helper()
	c.defaults(&o.Config, &o.Logger, &o.Listen, &o.EventLog, "region-"+o.Name)
	if o.EventLogInterval == 0 {
		o.EventLogLines = true // tests look at each decision; counts when asked for
	}
	if len(o.Coordinators) == 0 {
		o.Coordinators = c.coordinators
	}
	user := o.Ready
	ready := make(chan string, 1)
	o.Ready = func(addr string) {
		if user != nil {
			user(addr)
		}
		ready <- addr
	}
	a, err := agent.New(o)
	if err != nil {
		c.t.Fatalf("servicetest: agent %s: %v", o.Name, err)
	}
	if setup != nil {
		setup(a)
	}
	p := c.process(o.EventLog)
	if o.TLSCert != "" {
		p.scheme = "https"
	}
	ctx := c.start(p, &c.agents)
	go func() {
		defer close(p.done)
		p.err = a.Run(ctx)
		c.report(ctx, "agent "+o.Name, p.err)
	}()
	c.await(p, ready, "agent "+o.Name)
	return &Agent{Agent: a, Process: p, cluster: c}
}

func (c *Cluster) defaults(cfg **config.Config, log **slog.Logger, listen, eventLog *string, name string) {
	if *cfg == nil {
		*cfg = c.Config
	}
	if *log == nil {
		*log = c.Log
	}
	if *listen == "" {
		*listen = "127.0.0.1:0"
	}
	if *eventLog == "" && !c.NoEventLogs {
		c.n++
		*eventLog = filepath.Join(c.Dir, fmt.Sprintf("%s-%d.jsonl", name, c.n))
	}
}

func (c *Cluster) process(eventLog string) *Process {
	if eventLog != "" {
		c.logs = append(c.logs, eventLog)
	}
	return &Process{EventLog: eventLog, done: make(chan struct{}), scheme: "http"}
}

// start derives the process's context from the cluster's and counts the
// process in wg until it ends.
func (c *Cluster) start(p *Process, wg *sync.WaitGroup) context.Context {
	ctx, cancel := context.WithCancel(c.ctx)
	p.cancel = cancel
	wg.Add(1)
	go func() {
		<-p.done
		cancel()
		wg.Done()
	}()
	return ctx
}

// report fails the test with an error a process returned on its own.
func (c *Cluster) report(ctx context.Context, who string, err error) {
	if err != nil && ctx.Err() == nil {
		c.t.Errorf("servicetest: %s: %v", who, err)
	}
}

func (c *Cluster) await(p *Process, ready <-chan string, who string) {
	c.t.Helper()
	select {
	case p.Addr = <-ready:
		p.URL = p.scheme + "://" + p.Addr
	case <-p.done:
		c.t.Fatalf("servicetest: %s ended before it served: %v", who, p.err)
	case <-time.After(StartTimeout):
		p.Stop() //nolint:errcheck // the timeout is the error
		c.t.Fatalf("servicetest: %s did not serve within %v", who, StartTimeout)
	}
}

// Client is an HTTP client of the cluster's processes: with ClientTLS,
// when the test set one.
func (c *Cluster) Client(timeout time.Duration) *http.Client {
	if c.ClientTLS == nil {
		return &http.Client{Timeout: timeout}
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = c.ClientTLS.Clone()
	return &http.Client{Timeout: timeout, Transport: t}
}

// EventLogs are the paths of the event logs of every process started.
func (c *Cluster) EventLogs() []string { return c.logs }

// Check reads every process's event log, merges them and checks them
// as afloat quota check does; it returns the report and the merged
// events. Call it once the processes have stopped, or their last lines
// may not be written yet.
func (c *Cluster) Check() (eventlog.Report, []eventlog.Event) {
	c.t.Helper()
	var all collect
	for _, path := range c.logs {
		f, err := eventlog.OpenLog(path) // with its rotated parts
		if errors.Is(err, os.ErrNotExist) {
			continue // a process that ended before it opened its log
		}
		if err != nil {
			c.t.Fatal(err)
		}
		err = eventlog.ReadLog(f, &all)
		f.Close()
		if err != nil {
			c.t.Fatalf("servicetest: %s: %v", path, err)
		}
	}
	events, _ := eventlog.Merge(all.events)
	chk := eventlog.NewChecker()
	var end int64
	for i := range events {
		chk.Write(&events[i])
		end = max(end, events[i].T)
	}
	return chk.Finish(end), events
}

type collect struct{ events []eventlog.Event }

func (c *collect) Write(e *eventlog.Event) { c.events = append(c.events, *e) }
