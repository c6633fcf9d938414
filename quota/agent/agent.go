package agent

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/afloat/afloat/internal/hostcheck"
	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/eventlog"
	"github.com/afloat/afloat/quota/internal/ops"
	"github.com/afloat/afloat/quota/region"
	"github.com/afloat/afloat/quota/remote"
)

// ErrOptions: New was given options the agent cannot run with (the
// message names the option by its flag in afloat quota region, such as
// --listen, and says what it wants), or a front was asked for that the
// config does not set up.
var ErrOptions = errors.New("agent: invalid options")

// GCPercent is the garbage collector's target (GOGC) a region agent's
// process runs best at: its live heap is small and its garbage per check
// a few hundred bytes, so collecting at 400 % instead of 100 % makes the
// collector run a quarter as often, which is most of the decision API's
// tail (docs/benchmarks.md). A library does not set it: afloat quota
// region does, unless GOGC is in the environment.
const GCPercent = 400

// DefaultProxyListen is the reverse proxy's address when Options.Upstream
// is set and Options.ProxyListen is not.
const DefaultProxyListen = "127.0.0.1:7090"

// Options configures an agent (New). Its fields are afloat quota
// region's flags, and New's refusals name them so.
type Options struct {
	Config *config.Config
	// Name is the region; it must be in the config's regions.
	Name string
	// Coordinators are the coordinators' URLs, host:port or
	// http(s)://host:port (remote.ParseEndpoints); at least one.
	Coordinators []string
	// Listen is the decision API's address (host:port; port 0: any free
	// port).
	Listen string
	// EventLog, if not empty, is the event log's path.
	EventLog string
	// EventLogLines writes a line for every decision to the event log, as
	// audits and tests want: about 80 bytes a decision, 68 GB a day at
	// 10,000 checks a second. Without it, the log counts each tenant's
	// decisions over EventLogInterval (eventlog.Counted): 10 ms to 10 s,
	// 0 for eventlog.DefaultCountInterval (1 s); the checker allows R
	// times the interval of slack for counts (docs/quota/operations.md,
	// "Event logs in production"). The two do not go together.
	EventLogLines    bool
	EventLogInterval time.Duration
	// EventLogMaxMB rotates the event log once it reaches that many MiB,
	// keeping EventLogKeep rotated files (eventlog.Rotated); 0 never
	// rotates, and EventLogKeep is then not used.
	EventLogMaxMB int
	EventLogKeep  int
	// Logger logs what the agent does; required.
	Logger *slog.Logger
	// Ready, if not nil, is called with the API's address once it serves
	// (and the gRPC service and the proxy, when asked for, serve too).
	Ready func(addr string)
	// GRPCListen, if not empty, is the address of Envoy's rate-limit
	// service (GRPCServer; the config's envoy section).
	GRPCListen string
	// Upstream, if not empty, is the URL the reverse proxy on ProxyListen
	// fronts (ProxyHandler; the config's proxy section). ProxyListen
	// defaults to DefaultProxyListen with an Upstream, and needs one.
	Upstream    string
	ProxyListen string
	// Hosts are host names the decision API answers besides the loopback
	// names and Listen's host (quota/internal/ops, hosts.go): what its clients call it by,
	// such as a service's DNS name. Any other Host gets 421.
	Hosts []string
	// AllowRemote must be set for a Listen address beyond loopback, unless
	// ClientCA authenticates the decision API's clients: without it, the
	// API has no authentication, and whoever reaches it can spend any
	// tenant's tokens. Run then logs a warning.
	AllowRemote bool
	// TLSCert and TLSKey, if given, are the files of the certificate and
	// private key (PEM) the decision API, the gRPC service and the proxy
	// serve TLS with; without them they serve plain HTTP (and gRPC),
	// which Run warns of beyond loopback. SIGHUP reads them again.
	TLSCert, TLSKey string
	// ClientCA, if given, is the file of the CA certificates (PEM) that
	// sign the certificates the decision API's and the gRPC service's
	// clients must present (mutual TLS): it authenticates them. The
	// proxy, which serves end users, does not ask. Needs TLSCert.
	ClientCA string
	// CA, if given, is the file of the CA certificates (PEM) that sign the
	// coordinators' certificates (default: the system's roots), and
	// ClientCert and ClientKey the files of the region's client
	// certificate, presented to the coordinators: one naming the region
	// (remote.RegionURI) stands in for its token. With any of them, a
	// coordinator given as host:port is https://host:port, and an
	// http:// one is refused.
	CA, ClientCert, ClientKey string
	// ConfigFile is the path Config was read from, and Reload, if not
	// nil, asks for it to be read again (afloat quota region sends on
	// SIGHUP): the region's token, which the agent presents from the
	// next request on, and the listeners' certificates (TLSCert, TLSKey,
	// ClientCA) change; the log says whether the token changed, never the
	// token. A file that does not load, or adds or removes a region, is
	// refused whole and logged, and the config in use stays
	// (docs/quota/operations.md, "Rotating a token").
	ConfigFile string
	Reload     <-chan struct{}
	// MetricsTenants names the tenants whose own series GET /metrics
	// exports (afloat_quota_region_tenant_…), beside the sums over every
	// tenant it always exports: at most 100 names. A name the region
	// does not serve has none, and is counted
	// (afloat_quota_region_metrics_tenants_missing): tenants come and go
	// while the agent runs. MetricsTop adds the tenants refused the most
	// tokens since the agent started: 0 (none) to 100.
	MetricsTenants []string
	MetricsTop     int
	// HandoverFile, if not empty, is where the agent leaves the region's
	// leases to the next agent when it stops, instead of ending them,
	// and where it resumes from when it starts, if a predecessor left a
	// file there (docs/quota/operations.md, "Restarting an agent"): a
	// restart then renews every tenant's lease without a ledger write,
	// where without a handover each is a first lease to write. Its
	// folder must exist; the file holds the region's incarnation, a
	// secret (mode 0600). An agent killed (kill -9) leaves none: its
	// successor waits for its leases to end, as without the option.
	HandoverFile string

	certs     *ops.ServerCerts // the listeners' (TLSCert), nil for plain
	clientTLS *tls.Config      // to the coordinators, nil for the default

	clock        func() int64  // the agent's clock, for tests: a.now reads it instead of the limiter's
	tenantsEvery time.Duration // how often the agent asks for its tenants; default tenantsEvery (tenants.go)
}

// Agent is a region agent: a region.Limiter for the tenants whose
// traffic enters the region, renewing through the coordinators, and a
// local decision API answering from local state only.
type Agent struct {
	o   Options
	lim *region.Limiter
	// tenants: immutable, swapped whole as the coordinator's list
	// changes (tenants.go), so readers take no lock.
	tenants atomic.Pointer[map[string]quota.Tenant]
	start   time.Time // lim.Start(): the limiter's clock is Unix start + lim.Now()
	events  *eventlog.File

	envoy   *envoyIndex   // nil without the config's envoy section
	front   fronts        // the gRPC service and the proxy, while Run serves them
	metrics *agentMetrics // GET /metrics (metrics.go)

	// held is the coordinator's last refusal to attach, while another
	// agent holds the region; nil once this one holds it (standby.go).
	held      atomic.Pointer[heldAt]
	heldMu    sync.Mutex
	heldSaid  time.Time // when the wait was last logged
	heldTimes int       // refusals since

	hosts *hostcheck.Names // the names the decision API answers
}

// New checks the options and builds an agent; Run runs it. Nothing
// starts before the options are checked: its refusals wrap ErrOptions
// (or, for a --host that is not a host name, hostcheck.ErrName too).
func New(o Options) (*Agent, error) {
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	hosts, err := ops.HostNames(o.Hosts, o.Listen)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	// The file's tenants of the region, until the coordinator's list
	// comes (tenants.go); none is fine: the region waits for it.
	ts := o.Config.TenantsOf(o.Name)
	a := &Agent{o: o, hosts: hosts}
	names := make([]string, len(ts))
	first := make(map[string]quota.Tenant, len(ts))
	for i, t := range ts {
		names[i] = t.Name
		first[t.Name] = t
	}
	a.tenants.Store(&first) // the file's, until the coordinator answers
	cfg := region.DefaultConfig(o.Name, names...)
	cfg.Retry, cfg.MaxRetry = o.Config.Agent.Retry, o.Config.Agent.MaxRetry
	cfg.Jitter = 0.2 // regions cut off together come back spread over a fifth of the interval
	// A call is a body of the network API; two at a time (the default)
	// pace a region's start to the coordinator's answers.
	cfg.BatchSize = remote.MaxBatch
	// Request numbers never repeat across restarts: the coordinator
	// answers a number it has seen with the grant it gave it.
	cfg.SeqBase = uint64(time.Now().UnixMicro())
	lim, err := region.New(cfg)
	if err != nil {
		return nil, err
	}
	a.lim = lim
	// One clock: the limiter's own origin, so that the log's instants
	// are the limiter's (a time.Now read here, apart from it, put every
	// region event early by the gap between the two reads).
	a.start = lim.Start()
	if err := a.checkFronts(); err != nil {
		return nil, err
	}
	a.metrics = newAgentMetrics(lim, a.now, func() bool { return a.held.Load() != nil }, o.MetricsTenants, o.MetricsTop)
	return a, nil
}

// Limiter is the agent's limiter.
func (a *Agent) Limiter() *region.Limiter { return a.lim }

// now reads the agent's clock, on which it asks its limiter everything:
// the limiter's own (Limiter.Now), or the one a test steps.
func (a *Agent) now() int64 {
	if a.o.clock != nil {
		return a.o.clock()
	}
	return a.lim.Now()
}

func (a *Agent) unix(now int64) int64 { return a.start.UnixNano() + now }

// Run runs the agent until ctx ends, then gives its leases back.
func (a *Agent) Run(ctx context.Context) error {
	o := a.o
	log := o.Logger
	inc := a.resume()
	client, err := remote.NewClient(remote.ClientConfig{
		Endpoints: o.Coordinators, Region: o.Name, Token: o.Config.Regions[o.Name].Token,
		OnNudge: a.lim.Nudge, TLS: o.clientTLS, Incarnation: inc,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("agent: --listen %s: %w", o.Listen, err)
	}
	if o.EventLog != "" {
		if a.events, err = eventlog.OpenFile(o.EventLog, o.eventLogOptions()...); err != nil {
			ln.Close()
			return err
		}
		ops.WriteStarts(a.events, a.unix(a.now()), o.Config.QuotaTenants())
	}
	hs := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 16 << 10,
		ErrorLog: ops.ServerLog(log)}
	if o.certs != nil {
		// With a client CA, every client must present a certificate it
		// signs: that is the decision API's authentication.
		ln = tls.NewListener(ln, o.certs.Config(tls.RequireAndVerifyClientCert))
	}
	serveErr := make(chan error, 3)
	go func() { serveErr <- hs.Serve(ln) }()
	if err := a.startFronts(serveErr); err != nil {
		hs.Close()
		a.events.Close() //nolint:errcheck // the error at hand says more
		return err
	}
	log.Info("quota region: serving", "region", o.Name, "listen", ln.Addr().String(), "tenants", len(*a.tenants.Load()), "coordinators", o.Coordinators,
		"tls", o.certs != nil, "client_certificates", o.certs.Mutual())
	if w := ops.PlainWarning("quota region", "--listen", ln.Addr().String(), o.certs != nil); w != "" {
		log.Warn(w)
	}
	if w := o.listenWarning(ln.Addr().String()); w != "" {
		log.Warn(w, "listen", ln.Addr().String(), "hosts", a.hosts.String())
	}
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}

	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var journalErr error
	var handover region.Handover
	wg.Go(func() {
		// At the end the leases go with the region's detach, one write,
		// rather than returned one by one: a write each (region.WithExit)
		// — or, with a handover file, to the next agent.
		exit := func(ctx context.Context) error { return a.detach(ctx, client) }
		end := region.WithExit(exit)
		if o.HandoverFile != "" {
			end = region.WithHandover(&handover)
		}
		err := a.lim.Run(rctx, holdWatch{a.metrics.timed(client), a}, region.WithLogger(log), region.WithJournal(agentJournal{a}), end)
		if errors.Is(err, region.ErrJournal) {
			journalErr = err
		}
	})
	wg.Go(func() { a.watch(rctx, client) })
	wg.Go(func() { a.followTenants(rctx, client) })
	if o.Reload != nil {
		wg.Go(func() { a.reloads(rctx, client) })
	}
	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		runErr = fmt.Errorf("agent: serving: %w", err)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	hs.Shutdown(sctx) //nolint:errcheck
	a.stopFronts(sctx)
	scancel()
	cancel()
	wg.Wait()
	// Run detached as it ended (WithExit): nothing spent any more, and the
	// next agent of the region (a rolling update's) need not wait for the
	// leases to end. This detach is for an agent whose Run did not get
	// there; it does nothing after one that did — or after a handover,
	// which leaves the hold to the next agent.
	if o.HandoverFile == "" || !a.handOver(client, handover) {
		dctx, dcancel := context.WithTimeout(context.Background(), 2*time.Second)
		a.detach(dctx, client) //nolint:errcheck // said in the log
		dcancel()
	}
	if err := a.events.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr == nil {
		runErr = journalErr
	}
	st := a.lim.RunStats()
	log.Info("quota region: stopped", "region", o.Name, "renewals", st.Renewals, "renew_failures", st.RenewFailures,
		"returns", st.Returns, "return_failures", st.ReturnFailures, "journal_failures", st.JournalFailures,
		"batches", st.Batches, "return_batches", st.ReturnBatches, "batches_busy", st.BatchesBusy,
		"batches_timed_out", st.BatchesTimedOut, "batches_unavailable", st.BatchesUnavailable, "batches_held", st.BatchesHeld)
	return runErr
}

// check refuses options the agent cannot run with, naming each by its
// flag, and fills in what they leave to defaults: the coordinators in
// one form, the proxy's address.
func (o *Options) check() error {
	switch {
	case o.Config == nil:
		return errors.New(`--config: want the cluster's config (YAML or JSON: docs/quota/config.md)`)
	case o.Logger == nil:
		return errors.New("a logger is required")
	case o.Reload != nil && o.ConfigFile == "":
		return errors.New("a reload needs the config's file (ConfigFile)")
	}
	regions := slices.Sorted(maps.Keys(o.Config.Regions))
	if _, ok := o.Config.Regions[o.Name]; !ok {
		return fmt.Errorf("--name %q: not in the config's regions: want one of %s", o.Name, strings.Join(regions, ", "))
	}
	if o.Upstream != "" && o.ProxyListen == "" {
		o.ProxyListen = DefaultProxyListen
	}
	for _, l := range [...]struct{ field, addr string }{{"--listen", o.Listen}, {"--grpc-listen", o.GRPCListen}, {"--proxy-listen", o.ProxyListen}} {
		if err := ops.CheckListen(l.field, l.addr); err != nil {
			return err
		}
	}
	if !o.AllowRemote && o.ClientCA == "" && !hostcheck.ListenLoopback(o.Listen) {
		return fmt.Errorf("--listen %s: beyond loopback, and the decision API has no authentication: "+
			"whoever reaches it can spend any tenant's tokens; listen on 127.0.0.1 or [::1], require client certificates (--client-ca), or allow it explicitly (--allow-remote)", o.Listen)
	}
	switch i := o.EventLogInterval; {
	case o.EventLogLines && i != 0:
		return fmt.Errorf("--event-log-interval %v: not with --event-log-lines (a line for every decision has no interval)", i)
	case i != 0 && (i < eventlog.MinCountInterval || i > eventlog.MaxCountInterval):
		return fmt.Errorf("--event-log-interval %v: want %v to %v (0: %v)", i, eventlog.MinCountInterval, eventlog.MaxCountInterval, eventlog.DefaultCountInterval)
	}
	if err := ops.CheckRotation(o.EventLogMaxMB, o.EventLogKeep); err != nil {
		return err
	}
	if err := o.checkMetrics(); err != nil {
		return err
	}
	if err := checkHandoverFile(o.HandoverFile); err != nil {
		return err
	}
	var err error
	if o.certs, err = ops.LoadServer(ops.TLSFiles{Cert: o.TLSCert, Key: o.TLSKey, ClientCA: o.ClientCA}); err != nil {
		return err
	}
	if o.clientTLS, err = remote.LoadClientTLS(o.CA, o.ClientCert, o.ClientKey); err != nil {
		return err
	}
	if o.Config.Regions[o.Name].Token == "" && o.ClientCert == "" {
		return fmt.Errorf("--config: regions.%s has no token: give the region's client certificate (--client-cert, --client-key) or a token", o.Name)
	}
	if o.clientTLS != nil {
		o.Coordinators, err = remote.ParseEndpointsTLS("--coordinator", o.Coordinators)
	} else {
		o.Coordinators, err = remote.ParseEndpoints("--coordinator", o.Coordinators)
	}
	return err
}

// eventLogOptions are the event log's options: counts or lines, and the
// rotation.
func (o *Options) eventLogOptions() []eventlog.FileOption {
	opts := ops.Rotation(o.EventLogMaxMB, o.EventLogKeep)
	if !o.EventLogLines {
		opts = append(opts, eventlog.Counted(cmp.Or(o.EventLogInterval, eventlog.DefaultCountInterval)))
	}
	return opts
}

// listenWarning is what Run warns of when AllowRemote is set: that the
// decision API, without authentication, is reachable beyond loopback; or
// that the flag changes nothing on a loopback address.
func (o *Options) listenWarning(addr string) string {
	switch {
	case !o.AllowRemote:
		return ""
	case !hostcheck.ListenLoopback(o.Listen) && o.ClientCA != "":
		return "" // the client certificates authenticate
	case !hostcheck.ListenLoopback(o.Listen):
		return "quota region: the decision API listens beyond loopback and has no authentication: whoever reaches " +
			addr + " can spend any tenant's tokens; let only the services it serves reach it"
	}
	return "quota region: --allow-remote with a loopback --listen changes nothing"
}

// agentJournal is the limiter's journal: the agent's event log, each
// record written through to the file before the limiter goes on. The
// limiter says which lease each tenant spends under, and until when; the
// lines are eventlog's one translation of that, as the chaos harness's.
type agentJournal struct{ a *Agent }

func (j agentJournal) Installed(at int64, in region.Installed) error {
	eventlog.InstallEvents(in, at, j.a.unix, j.a.events)
	return j.a.events.Flush()
}

func (j agentJournal) Expired(at int64, lease quota.Lease) error {
	eventlog.ExpireEvent(lease, at, j.a.unix, j.a.events)
	return j.a.events.Flush()
}

func (j agentJournal) Returned(at int64, ret quota.Return) error {
	eventlog.ReturnEvent(ret, at, j.a.unix, j.a.events)
	return j.a.events.Flush()
}

// holdWatch tells the agent what the coordinator says of its hold on the
// region: a renewal refused because another agent holds it puts this one
// on standby, and one answered ends that (standby.go).
type holdWatch struct {
	region.Coordinator
	a *Agent
}

func (h holdWatch) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	res, err := h.Coordinator.RenewBatch(ctx, reqs)
	why := err
	if err == nil {
		// The hold shows in each answer: one granted means this agent
		// holds the region; refusals say why not.
		for _, r := range res {
			if r.Err == nil {
				h.a.attached()
				return res, nil
			}
		}
		if len(res) > 0 {
			why = res[0].Err
		}
	}
	if why != nil && ctx.Err() == nil {
		h.a.refused(why)
	}
	return res, err
}

// watch polls the coordinator for nudges, and for whether the region is
// still this agent's (leases that run out are the limiter's to say:
// region.Journal's Expired).
func (a *Agent) watch(ctx context.Context, client *remote.Client) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := client.Poll(pctx) // renewals report the coordinator's state; a poll, whether the region is ours
		cancel()
		if err == nil {
			a.attached()
		} else {
			a.refused(err)
		}
	}
}

// AllowRequest is the body of POST /v1/allow.
type AllowRequest struct {
	Tenant   string `json:"tenant"`
	Endpoint string `json:"endpoint"`
	// N is how many requests to the endpoint, 1 to 1,000,000; absent, 1
	// (0 is refused, not read as absent). The cost is N times the
	// endpoint's cost.
	N int64 `json:"n"`
}

// AllowAnswer is the answer of POST /v1/allow.
type AllowAnswer struct {
	Allowed bool `json:"allowed"`
	// Remaining is the tokens left in the region's bucket for the tenant.
	Remaining float64 `json:"remaining"`
	// RetryAfter is, when refused, the seconds to wait (see
	// region.Decision.RetryAfter); RetryKnown says whether it is a
	// promise or the bounded retry policy.
	RetryAfter float64 `json:"retry_after"`
	RetryKnown bool    `json:"retry_known"`
	// Never says that the request costs more than the tenant's quota can
	// ever hold in this region (region.Decision.Never): it will not
	// be admitted however long the client waits, so it should not retry
	// (RetryAfter is 0). MaxCost is then the most a request may cost.
	Never   bool  `json:"never"`
	MaxCost int64 `json:"max_cost,omitempty"`
}

// maxAllowBody bounds a decision request.
const maxAllowBody = 4 << 10

// Handler is the decision API: POST /v1/allow, and GET /v1/status for a
// look at the leases; GET /metrics, /healthz and /readyz as well. It
// answers each check from one region.Decision (Limiter.DecideAt) on local
// state only: no call to the coordinator is made for a decision. It
// answers only requests whose Host is one of the agent's names
// (quota/internal/ops, hosts.go; Options.Hosts), others 421.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/allow", a.allow)
	mux.HandleFunc("GET /v1/status", a.status)
	ops.Observe(mux, a.metrics.reg, a.regionReady) // GET /metrics, /healthz, /readyz (health.go, and quota/internal/ops)
	return ops.HostGuard(a.hosts, "quota region", mux)
}

// bufs holds the decision API's buffers: a check allocates little, so
// that garbage collection adds little to its tail.
var bufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (a *Agent) allow(w http.ResponseWriter, r *http.Request) {
	began := time.Now()
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		ops.HTTPError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("quota region: Content-Type %q: want application/json", ct))
		return
	}
	buf := bufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 2*maxAllowBody {
			buf.Reset()
			bufs.Put(buf)
		}
	}()
	buf.Reset()
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxAllowBody)); err != nil {
		ops.HTTPError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("quota region: body over %d bytes", maxAllowBody))
		return
	}
	req, err := decodeAllow(buf.Bytes())
	if err != nil {
		ops.HTTPError(w, http.StatusBadRequest, fmt.Sprintf("quota region: body: want one object {\"tenant\",\"endpoint\",\"n\"}: %v", err))
		return
	}
	t, ok := a.tenant(req.Tenant)
	switch {
	case !ok:
		ops.HTTPError(w, http.StatusNotFound, fmt.Sprintf("quota region: tenant %q: not served in region %q", req.Tenant, a.o.Name))
		return
	case req.N < 1 || req.N > 1_000_000:
		ops.HTTPError(w, http.StatusBadRequest, fmt.Sprintf("quota region: n %d: want 1 to 1000000", req.N))
		return
	case len(req.Endpoint) > 1024:
		ops.HTTPError(w, http.StatusBadRequest, fmt.Sprintf("quota region: endpoint of %d bytes: want at most 1024", len(req.Endpoint)))
		return
	}
	cost := req.N * t.Cost(req.Endpoint)
	now := a.now()
	// One decision, the whole answer: the balance and the time to retry
	// come from the lease that decided.
	d := a.lim.DecideAt(now, req.Tenant, cost)
	ans := AllowAnswer{Allowed: d.Allowed, Remaining: d.Remaining.Float()}
	switch {
	case d.Allowed:
		a.event(now, eventlog.Admit, req.Tenant, cost)
	case d.Never:
		ans.Never, ans.MaxCost = true, d.MaxCost
		a.event(now, eventlog.Reject, req.Tenant, cost)
	default:
		ans.RetryAfter, ans.RetryKnown = math.Ceil(d.RetryAfter.Seconds()*1000)/1000, d.RetryKnown
		a.event(now, eventlog.Reject, req.Tenant, cost)
	}
	out := appendAllowAnswer(buf.AvailableBuffer()[:0], ans)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.Write(out) //nolint:errcheck // the client went away
	decided(a.metrics.decideAPI, began)
}

// event logs a decision of the region's, at now on the limiter's clock.
// Without an event log it does nothing, and the event is not allocated.
func (a *Agent) event(now int64, kind eventlog.Kind, tenant string, n int64) {
	if a.events == nil {
		return
	}
	a.events.Write(&eventlog.Event{T: a.unix(now), Kind: kind, Tenant: tenant, Region: a.o.Name, N: n})
}

// appendAllowAnswer writes ans as encoding/json would (its fields are
// bools, finite floats and an integer), without its allocations.
func appendAllowAnswer(out []byte, ans AllowAnswer) []byte {
	out = append(out, `{"allowed":`...)
	out = strconv.AppendBool(out, ans.Allowed)
	out = append(out, `,"remaining":`...)
	out = strconv.AppendFloat(out, ans.Remaining, 'f', -1, 64)
	out = append(out, `,"retry_after":`...)
	out = strconv.AppendFloat(out, ans.RetryAfter, 'f', -1, 64)
	out = append(out, `,"retry_known":`...)
	out = strconv.AppendBool(out, ans.RetryKnown)
	out = append(out, `,"never":`...)
	out = strconv.AppendBool(out, ans.Never)
	if ans.MaxCost != 0 {
		out = append(out, `,"max_cost":`...)
		out = strconv.AppendInt(out, ans.MaxCost, 10)
	}
	return append(out, "}\n"...)
}

// TenantStatus is a tenant's line in GET /v1/status.
type TenantStatus struct {
	Tenant  string  `json:"tenant"`
	Lease   uint64  `json:"lease"`
	Epoch   uint64  `json:"epoch"`
	Valid   bool    `json:"valid"`
	Rate    float64 `json:"rate"`
	Burst   float64 `json:"burst"`
	Balance float64 `json:"balance"`
	// ValidFor is the seconds the lease has left.
	ValidFor float64 `json:"valid_for"`
}

func (a *Agent) status(w http.ResponseWriter, r *http.Request) {
	now := a.now()
	out := struct {
		Region  string          `json:"region"`
		Tenants []TenantStatus  `json:"tenants"`
		Run     region.RunStats `json:"run"`
	}{Region: a.o.Name, Run: a.lim.RunStats()}
	for _, name := range a.lim.Tenants() {
		st := a.lim.Status(now, name)
		ts := TenantStatus{Tenant: name, Lease: st.Lease.ID, Epoch: st.Epoch, Valid: st.Valid,
			Rate: st.Lease.Rate.Float(), Burst: st.Lease.Burst.Float(), Balance: st.Balance.Float()}
		if st.Valid {
			ts.ValidFor = time.Duration(st.Until - now).Seconds()
		}
		out.Tenants = append(out.Tenants, ts)
		if len(out.Tenants) == 1000 {
			break // a look, not a dump
		}
	}
	ops.WriteJSON(w, out)
}
