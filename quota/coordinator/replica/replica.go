package replica

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/afloat/afloat/internal/hostcheck"
	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/etcdledger"
	"github.com/afloat/afloat/quota/etcdmember"
	"github.com/afloat/afloat/quota/eventlog"
	"github.com/afloat/afloat/quota/internal/ops"
	"github.com/afloat/afloat/quota/remote"
)

// ErrOptions: Run was given options a replica cannot run with; the
// message names the option by its flag in afloat quota coordinator, such
// as --etcd, and says what it wants.
var ErrOptions = errors.New("replica: invalid options")

// Options configures a replica (Run). Its fields are afloat quota
// coordinator's flags, and Validate's refusals name them so.
type Options struct {
	Config *config.Config
	// Listen is the address of the API (host:port; port 0: any free
	// port).
	Listen string
	// Advertise is the URL regions reach this coordinator at, announced
	// in the election so that followers can name the leader: host:port
	// or http(s)://host:port (remote.ParseEndpoints); default
	// http://Listen.
	Advertise string
	// Etcd lists the etcd cluster's client URLs, each host:port or
	// http(s)://host:port; empty starts an embedded single member in
	// DataDir (default etcdmember.DefaultDataDir), which is why the two
	// do not go together.
	Etcd    []string
	DataDir string
	// EtcdClientURL and EtcdPeerURL are where the embedded etcd listens
	// (host:port or http://host:port, loopback only: the embedded member
	// has no TLS or auth); default a free loopback port each, kept in
	// DataDir across restarts. Not with Etcd.
	EtcdClientURL, EtcdPeerURL string
	// EventLog, if not empty, is the event log's path.
	EventLog string
	// EventLogMaxMB rotates the event log once it reaches that many MiB,
	// keeping EventLogKeep rotated files (eventlog.Rotated); 0 never
	// rotates, and EventLogKeep is then not used.
	EventLogMaxMB int
	EventLogKeep  int
	// Logger logs what the process does; required.
	Logger *slog.Logger
	// Ready, if not nil, is called with the API's address once it serves.
	Ready func(addr string)
	// Hosts are host names the API answers besides the loopback names,
	// Listen's host and Advertise's host (quota/internal/ops, hosts.go): the names regions
	// and operators call it by (their --coordinator URLs). Any other
	// Host gets 421.
	Hosts []string
	// TLSCert and TLSKey, if given, are the files of the certificate and
	// private key (PEM) the API serves TLS with; the default Advertise is
	// then https://Listen. Without them the API serves plain HTTP, which
	// Run warns of beyond loopback. SIGHUP reads them again.
	TLSCert, TLSKey string
	// ClientCA, if given, is the file of the CA certificates (PEM) that
	// sign the regions' client certificates: a region may authenticate
	// with a certificate naming it (remote.RegionURI) instead of its
	// token, and a region of the config without a token must. Needs
	// TLSCert.
	ClientCA string
	// ConfigFile is the path Config was read from, and Reload, if not
	// nil, asks for it to be read again (afloat quota coordinator sends
	// on SIGHUP): the regions' and the operators' tokens change at once,
	// and the certificates (TLSCert, TLSKey, ClientCA) are read again;
	// the log says which principals changed, never a token, and which
	// sections changed but apply only at the next start. A file that
	// does not load, or adds or removes a region, is refused whole and
	// logged, and the config in use stays (docs/quota/operations.md,
	// "Rotating a token").
	ConfigFile string
	Reload     <-chan struct{}
	// MetricsTenants names the tenants whose own series GET /metrics
	// exports while the replica leads (afloat_quota_coordinator_tenant_…),
	// beside the sums over every tenant it always exports: at most 100
	// names. A name the leader does not serve has none, and is counted
	// (afloat_quota_coordinator_metrics_tenants_missing): tenants are
	// created and deleted while it runs.
	MetricsTenants []string

	metrics *coordMetrics // set by Run, for lead
}

// Run runs one coordinator replica until ctx ends: it serves
// the API at once — as a follower, answering 503 with the leader's
// address — and campaigns for the lead; while it leads it grants, every
// grant written to etcd before it is answered. Losing the lead (a
// successor fenced it, or its etcd session expired) sends it back to
// campaigning. Several replicas on one etcd cluster fail over to each
// other.
//
// connect starts the embedded etcd member if o names no etcd, and
// returns a client of the etcd, the most operations a transaction may
// hold there, and what closes both. who names the command in the log.
func connect(ctx context.Context, o Options, r resolved, who string) (*clientv3.Client, int, func(), error) {
	log, endpoints := o.Logger, r.etcd
	maxOps := o.Config.Etcd.MaxTxnOps
	closeMember := func() {}
	if len(endpoints) == 0 {
		dir := o.DataDir
		if dir == "" {
			dir = etcdmember.DefaultDataDir()
		}
		log.Info(who+": starting the embedded etcd", "data_dir", dir)
		m, err := etcdmember.StartMember(ctx, etcdmember.MemberConfig{Name: "afloat", DataDir: dir,
			ClientURL: r.etcdClientURL, PeerURL: r.etcdPeerURL})
		if err != nil && ctx.Err() != nil {
			log.Info(who + ": stopped while etcd was starting")
			return nil, 0, nil, err
		}
		if err != nil {
			return nil, 0, nil, err
		}
		closeMember = m.Close
		log.Info(who+": embedded etcd", "data_dir", dir, "client_url", m.ClientURL)
		endpoints = []string{m.ClientURL}
		if maxOps == 0 {
			maxOps = etcdmember.DefaultEmbeddedMaxTxnOps
		}
	}
	cli, err := etcdClient(ctx, endpoints, o.Config.Etcd, r.etcdTLS)
	if err != nil && ctx.Err() != nil {
		log.Info(who + ": stopped while connecting to etcd")
	}
	if err != nil {
		closeMember()
		return nil, 0, nil, err
	}
	return cli, maxOps, func() { cli.Close(); closeMember() }, nil
}

// Run refuses options Validate refuses, before anything starts.
func Run(ctx context.Context, o Options) error {
	r, err := o.resolve()
	if err != nil {
		return err
	}
	log, hosts := o.Logger, r.hosts
	cli, maxOps, closeEtcd, err := connect(ctx, o, r, "quota coordinator")
	if err != nil && ctx.Err() != nil {
		return nil // asked to stop (SIGTERM) while starting: stopped as asked
	}
	if err != nil {
		return err
	}
	defer closeEtcd()

	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("replica: --listen %s: %w", o.Listen, err)
	}
	advertise := o.Advertise
	if advertise == "" {
		advertise = "http://" + ln.Addr().String()
		if r.certs != nil {
			advertise = "https://" + ln.Addr().String()
		}
	}
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	ledger, err := etcdledger.Open(octx, etcdledger.Config{
		Client: cli, Prefix: o.Config.Etcd.Prefix, Cluster: o.Config.Cluster, Candidate: advertise,
		SessionTTL: o.Config.Etcd.SessionTTL, DeposeAfter: o.Config.Etcd.DeposeAfter, MaxTxnOps: maxOps,
	})
	cancel()
	if err != nil {
		ln.Close()
		return err
	}
	defer ledger.Close()

	var events *eventlog.File
	if o.EventLog != "" {
		if events, err = eventlog.OpenFile(o.EventLog, ops.Rotation(o.EventLogMaxMB, o.EventLogKeep)...); err != nil {
			ln.Close()
			return err
		}
		defer events.Close()
		ops.WriteStarts(events, time.Now().UnixNano(), o.Config.QuotaTenants())
	}

	var (
		current atomic.Pointer[coordinator.Server]
		leader  atomic.Value // string: the leader's URL as last read
	)
	leader.Store("")
	var seen sighting // a leader that had loaded the ledger, last seen
	bound := electionBound(o.Config.Etcd.SessionTTL)
	o.metrics = newCoordMetrics(current.Load, o.MetricsTenants)
	o.metrics.eventLog(events) // 0 without one
	mail := &remote.Mailbox{}
	regionKeys, err := remote.NewKeyring(o.Config.RegionTokens())
	if err != nil {
		ln.Close()
		return err
	}
	operatorKeys, err := remote.NewKeyring(o.Config.OperatorTokens())
	if err != nil {
		ln.Close()
		return err
	}
	h, err := remote.Handler(remote.HandlerConfig{
		Keyring: regionKeys, Nudges: mail, Logger: log, ClientCerts: r.certs.Mutual(),
		Lead: func() (remote.Backend, string) {
			if s := current.Load(); s != nil {
				return s, ""
			}
			return nil, leader.Load().(string)
		},
	})
	if err != nil {
		ln.Close()
		return err
	}
	h = withTenantsAPI(h, o.Config, operatorKeys, &current, &leader, log)
	h = o.metrics.handler(h, coordReady(current.Load, func() string { return leader.Load().(string) }, advertise,
		func() bool { return seen.within(time.Now(), bound) }))
	h = ops.HostGuard(hosts, "quota coordinator", h)
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 15 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 16 << 10,
		ErrorLog: ops.ServerLog(log)}
	if r.certs != nil {
		// Optional, not required, client certificates: a region may use
		// its token instead, and a scraper of /metrics neither.
		ln = tls.NewListener(ln, r.certs.Config(tls.VerifyClientCertIfGiven))
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		hs.Shutdown(sctx) //nolint:errcheck
		cancel()
	}()
	for _, d := range o.Config.Deprecated() {
		log.Warn("quota coordinator: the config has a setting that does nothing any more", "setting", d)
	}
	log.Info("quota coordinator: serving", "listen", ln.Addr().String(), "advertise", advertise, "etcd", cli.Endpoints(),
		"tls", r.certs != nil, "client_certificates", r.certs.Mutual())
	if w := ops.PlainWarning("quota coordinator", "--listen", ln.Addr().String(), r.certs != nil); w != "" {
		log.Warn(w)
	}
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}

	if o.Reload != nil {
		rl := &reloader{path: o.ConfigFile, cfg: o.Config, regions: regionKeys, operators: operatorKeys,
			certs: r.certs, log: log}
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-o.Reload:
					rl.reload()
				}
			}
		}()
	}

	// Followers learn where the leader is, for the regions they turn away.
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			lctx, cancel := context.WithTimeout(ctx, time.Second)
			if l, loaded, err := ledger.Leading(lctx); err == nil {
				leader.Store(l)
				if loaded && l != advertise {
					seen.saw(time.Now())
				}
			} else if errors.Is(err, etcdledger.ErrNotLeader) {
				leader.Store("") // none leads: /readyz says so
			}
			cancel()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()

	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		select {
		case err := <-serveErr:
			return fmt.Errorf("replica: serving: %w", err)
		default:
		}
		began := time.Now()
		err := lead(ctx, o, ledger, events, mail, &current, log)
		if ctx.Err() != nil {
			if err != nil && !errors.Is(err, context.Canceled) {
				log.Warn("quota coordinator: stopping", "err", err)
			}
			break
		}
		if time.Since(began) > 10*time.Second {
			backoff = 100 * time.Millisecond // it led a while: campaign again at once
		}
		log.Warn("quota coordinator: not leading; campaigning again", "err", err, "after", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second) // etcd unreachable: do not spin
	}
	// Stopped (SIGTERM): lead has finished or settled the writes in
	// flight (coordinator.Server.Run drains them); now stop serving, and
	// resign so that a successor leads at once rather than after the
	// session's TTL.
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	hs.Shutdown(sctx) //nolint:errcheck // the regions ask the next leader
	scancel()
	err = ledger.Close()
	log.Info("quota coordinator: stopped", "resigned", err == nil, "err", err)
	return nil
}

// Validate refuses options a replica cannot run with, naming each by its
// flag; its refusals wrap ErrOptions (and, for a --host that is not a
// host name, hostcheck.ErrName; for an endpoint, remote.ErrEndpoint).
func (o *Options) Validate() error {
	_, err := o.resolve()
	return err
}

// resolved are the options as Run uses them: the names the API answers,
// and the endpoints in one form (remote.ParseEndpoints).
type resolved struct {
	certs   *ops.ServerCerts // nil: plain HTTP
	etcdTLS *tls.Config      // the etcd client's, nil: plain (or the system's roots for https)
	// the embedded etcd's URLs, "" for a free port
	etcdClientURL, etcdPeerURL string
	hosts                      *hostcheck.Names
	advertise                  string
	etcd                       []string
}

// resolve is Validate, keeping what it read.
func (o *Options) resolve() (r resolved, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrOptions, err)
		}
	}()
	switch {
	case o.Config == nil:
		return r, errors.New(`--config: want the cluster's config (YAML or JSON: docs/quota/config.md)`)
	case o.Logger == nil:
		return r, errors.New("a logger is required")
	case o.Reload != nil && o.ConfigFile == "":
		return r, errors.New("a reload needs the config's file (ConfigFile)")
	}
	if err := ops.CheckListen("--listen", o.Listen); err != nil {
		return r, err
	}
	if err := ops.CheckRotation(o.EventLogMaxMB, o.EventLogKeep); err != nil {
		return r, err
	}
	if err := ops.CheckMetricsTenants(o.MetricsTenants); err != nil {
		return r, err
	}
	if r.certs, err = ops.LoadServer(ops.TLSFiles{Cert: o.TLSCert, Key: o.TLSKey, ClientCA: o.ClientCA}); err != nil {
		return r, err
	}
	if err := checkCertOnly(o.Config, r.certs.Mutual()); err != nil {
		return r, err
	}
	if r.etcdTLS, err = etcdTLS(o.Config.Etcd); err != nil {
		return r, err
	}
	if e := o.Config.Etcd; e.User != "" && e.Password == "" {
		return r, fmt.Errorf("--config: etcd.user %q: no password: give etcd.password_file, or set %s", e.User, config.EtcdPasswordEnv)
	}
	if r.hosts, err = ops.HostNames(o.Hosts, o.Listen); err != nil {
		return r, err
	}
	if o.Advertise != "" {
		adv, err := remote.ParseEndpoints("--advertise", []string{o.Advertise})
		if err != nil {
			return r, err
		}
		r.advertise = adv[0]
		u, _ := url.Parse(r.advertise)
		r.hosts.AddHostPort(u.Host)
	}
	for _, u := range []struct {
		field, url string
		out        *string
	}{{"--etcd-client-url", o.EtcdClientURL, &r.etcdClientURL}, {"--etcd-peer-url", o.EtcdPeerURL, &r.etcdPeerURL}} {
		if u.url == "" {
			continue
		}
		if len(o.Etcd) > 0 {
			return r, fmt.Errorf("--etcd and %s: the URL is the embedded etcd's; give one", u.field)
		}
		parsed, err := remote.ParseEndpoints(u.field, []string{u.url})
		if err != nil {
			return r, err
		}
		if !strings.HasPrefix(parsed[0], "http://") {
			return r, fmt.Errorf("%s %q: want http://host:port (the embedded etcd serves no TLS; for TLS and auth run etcd with its own tools, or afloat quota etcd, and give --etcd)", u.field, u.url)
		}
		if pu, _ := url.Parse(parsed[0]); !hostcheck.ListenLoopback(pu.Host) {
			return r, fmt.Errorf("%s %q: beyond loopback, and the embedded etcd has no authentication or TLS: listen on 127.0.0.1 or [::1]", u.field, u.url)
		}
		*u.out = parsed[0]
	}
	if r.etcdClientURL != "" && r.etcdClientURL == r.etcdPeerURL {
		return r, fmt.Errorf("--etcd-client-url and --etcd-peer-url: both %s: want two ports", r.etcdClientURL)
	}
	if len(o.Etcd) == 0 {
		return r, nil
	}
	if o.DataDir != "" {
		return r, errors.New("--etcd and --data-dir: the data directory is the embedded etcd's; give one")
	}
	r.etcd, err = remote.ParseEndpoints("--etcd", o.Etcd)
	return r, err
}

// etcdTLS is the etcd client's TLS config from the config's etcd
// section; nil when it gives no files (https:// endpoints then verify
// against the system's roots).
func etcdTLS(e config.EtcdConfig) (*tls.Config, error) {
	if e.CAFile == "" && e.CertFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if e.CAFile != "" {
		pool, err := remote.ReadCAs("--config: etcd.ca_file", e.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if e.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(e.CertFile, e.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("--config: etcd.cert_file %s, etcd.key_file %s: %w", e.CertFile, e.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// etcdClient connects to etcd with the config's TLS and credentials, and
// reads once, so that a client etcd refuses — no certificate it trusts,
// a CA that did not sign etcd's, a wrong password, no user where auth is
// on — fails here, saying so, rather than as a campaign that never wins.
// The password is in no error (etcd's own errors do not quote it).
func etcdClient(ctx context.Context, endpoints []string, e config.EtcdConfig, tlsCfg *tls.Config) (*clientv3.Client, error) {
	if err := probeTLS(endpoints, tlsCfg); err != nil {
		return nil, fmt.Errorf("replica: etcd: %w%s", err, etcdHint(e, tlsCfg))
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: endpoints, DialTimeout: 3 * time.Second,
		DialKeepAliveTime: time.Second, DialKeepAliveTimeout: time.Second,
		TLS: tlsCfg, Username: e.User, Password: string(e.Password),
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("replica: etcd client at %v: %w%s", endpoints, err, etcdHint(e, tlsCfg))
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Get(cctx, "/afloat-connect-check", clientv3.WithCountOnly()); err != nil {
		cli.Close()
		return nil, fmt.Errorf("replica: etcd at %v: %w%s", endpoints, err, etcdHint(e, tlsCfg))
	}
	return cli, nil
}

// probeTLS shakes hands with the https endpoints, so that a TLS refusal
// is named as one: etcd's gRPC client retries a failed handshake until
// its deadline and then says only "context deadline exceeded". A
// certificate the client does not trust fails the handshake; a client
// certificate the server refuses shows, in TLS 1.3, as an alert on the
// first read, which is why it reads briefly after. An endpoint it cannot
// reach is not its business (the client's errors say that well).
func probeTLS(endpoints []string, cfg *tls.Config) error {
	if cfg == nil {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	var first error
	for _, ep := range endpoints {
		host, ok := strings.CutPrefix(ep, "https://")
		if !ok {
			continue
		}
		c := cfg.Clone()
		c.NextProtos = []string{"h2"}
		d := &net.Dialer{Timeout: 2 * time.Second}
		conn, err := tls.DialWithDialer(d, "tcp", host, c)
		var op *net.OpError
		var ne net.Error
		if errors.As(err, &op) && op.Op == "dial" || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			continue // unreachable, or too slow to tell: not a TLS verdict; the client's errors say the rest
		}
		if err == nil {
			conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond)) //nolint:errcheck
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
			if errors.As(err, &ne) && ne.Timeout() {
				return nil // the server waits for the client's first bytes: the handshake held
			}
			if err == nil || errors.Is(err, io.EOF) {
				return nil
			}
		}
		if first == nil {
			first = fmt.Errorf("TLS with %s: %w", ep, err)
		}
	}
	return first
}

// etcdHint says which settings an etcd refusal may be about.
func etcdHint(e config.EtcdConfig, tlsCfg *tls.Config) string {
	return fmt.Sprintf(" (the config's etcd section: TLS %v, client certificate %v, user %q; docs/quota/operations.md, \"etcd with TLS and auth\")",
		tlsCfg != nil, e.CertFile != "", e.User)
}

// checkCertOnly refuses a config with a region that has no token unless
// client certificates are verified (--client-ca): such a region could
// not authenticate at all.
func checkCertOnly(cfg *config.Config, mutual bool) error {
	if mutual {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Regions)) {
		if cfg.Regions[name].Token == "" {
			return fmt.Errorf("--config: regions.%s has no token: it could authenticate only with a client certificate; give --client-ca (and --tls-cert, --tls-key), or a token", name)
		}
	}
	return nil
}

// lead campaigns, and once it wins, serves as the leader until it loses.
func lead(ctx context.Context, o Options, ledger *etcdledger.Ledger, events *eventlog.File,
	mail *remote.Mailbox, current *atomic.Pointer[coordinator.Server], log *slog.Logger) error {
	var srv *coordinator.Server
	opts := []coordinator.ServerOption{
		coordinator.WithNudges(mail.Put),
		coordinator.WithLogger(log),
	}
	if events != nil {
		opts = append(opts, coordinator.WithJournal(coordJournal{events, func() time.Time { return srv.Start() }}))
	}
	log.Info("quota coordinator: campaigning")
	var err error
	srv, err = coordinator.NewServer(ctx, coordinator.Config{Tenants: o.Config.QuotaTenants()}, o.metrics.ledger(ledger), opts...)
	if err != nil {
		return err
	}
	epoch := srv.Epoch()
	log.Info("quota coordinator: leading", "epoch", epoch)
	if d, restored := srv.Restoring(); restored {
		log.Warn("quota coordinator: the ledger was restored from a backup: no grant until every lease it may lack has run out",
			"for", d.Round(time.Millisecond))
	}
	// The leases restored from the ledger, so that a check of the logs
	// stops counting the older ones the ledger no longer holds: a leader
	// killed between a write to etcd and its line in the log loses the line
	// (an end, say), not the write.
	live := srv.LiveIDs()
	if live == nil {
		live = []uint64{}
	}
	// The fence's end as logged is at or before the true one: the time
	// is read first.
	at := time.Now()
	fence, _ := srv.Restoring()
	events.Write(&eventlog.Event{T: at.UnixNano(), Kind: eventlog.Restart, Epoch: epoch, Live: &live, Fence: int64(fence)})
	writeLoaded(events, time.Now().UnixNano(), srv.Tenants())
	events.Flush() //nolint:errcheck

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-ledger.Lost():
			log.Warn("quota coordinator: etcd session lost; stepping down", "epoch", epoch, "err", ledger.LostErr())
			cancel()
		case <-rctx.Done():
		}
	}()
	current.Store(srv)
	err = srv.Run(rctx)
	current.Store(nil)
	if errors.Is(err, quota.ErrStaleEpoch) {
		events.Write(&eventlog.Event{T: time.Now().UnixNano(), Kind: eventlog.Fenced, Epoch: epoch})
	}
	return err
}

// coordJournal is a coordinator's event log as its journal: the lines of a
// transaction's steps, flushed before their calls are answered, so that
// no grant a region installs is missing from the log; a failed write
// fails the calls.
type coordJournal struct {
	events *eventlog.File
	start  func() time.Time // the server's Start, for its clock in Unix time
}

func (j coordJournal) Append(entries []coordinator.Entry) error {
	start := j.start().UnixNano()
	unix := func(d time.Duration) int64 { return start + int64(d) }
	// The transaction's lines go to the file whole or not at all: if they
	// fail, the server fails the calls and appends them again with its
	// next write, and a line written twice would read as a lease granted
	// twice.
	var lines batch
	for _, en := range entries {
		eventlog.StepEvents(en.Step, unix(en.At), unix, &lines)
	}
	return j.events.Append(lines...)
}

// batch collects a transaction's events for one File.Append.
type batch []*eventlog.Event

func (b *batch) Write(e *eventlog.Event) {
	c := *e
	*b = append(*b, &c)
}
