//go:build embedetcd

package etcdmember

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/afloat/afloat/internal/hostcheck"
)

const embeddedEtcd = true

// Member is a running embedded etcd member.
type Member struct {
	etcd    *embed.Etcd
	lock    *os.File
	closing *atomic.Bool
	// ClientURL is where its clients connect.
	ClientURL string
}

// lockDir takes an exclusive lock on dir/afloat.lock, or fails at once
// with ErrDataDirInUse: two etcd members on one data directory would
// corrupt it (bbolt's own lock would only make the second one hang).
func lockDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("etcdmember: data directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "afloat.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("etcdmember: data directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		pid, _ := os.ReadFile(f.Name())
		f.Close()
		return nil, fmt.Errorf("%w: %s is locked (by pid %s); stop that process or give another --data-dir", ErrDataDirInUse, dir, strings.TrimSpace(string(pid)))
	}
	f.Truncate(0)                                 //nolint:errcheck // the pid is a courtesy
	f.WriteAt([]byte(fmt.Sprint(os.Getpid())), 0) //nolint:errcheck
	return f, nil
}

// urlsFile keeps the ports a member chose, so that it restarts on them.
const urlsFile = "afloat-etcd.json"

// StartMember starts an embedded etcd member and waits until it serves.
// It checks the data directory first (ErrDataDirDamaged names what is
// wrong), and waits at most 20 s for a member of its own (InitialCluster
// one member), 60 s for a member of a cluster (which waits for a quorum)
// before it gives up with an error. When ctx ends first it returns
// ctx.Err() at once if what it was doing stops, and within 5 s if not (a
// read that never returns): then whatever it had started is closed when
// it returns, in a goroutine of its own.
func StartMember(ctx context.Context, cfg MemberConfig) (*Member, error) {
	type result struct {
		m   *Member
		err error
	}
	done := make(chan result, 1)
	go func() {
		m, err := startMember(ctx, cfg)
		done <- result{m, err}
	}()
	select {
	case r := <-done:
		return r.m, r.err
	case <-ctx.Done():
	}
	grace := time.NewTimer(5 * time.Second)
	defer grace.Stop()
	select {
	case r := <-done:
		if r.m != nil {
			r.m.Close()
		}
	case <-grace.C:
		go func() {
			if r := <-done; r.m != nil {
				r.m.Close()
			}
		}()
	}
	return nil, fmt.Errorf("etcdmember: starting etcd: %w", ctx.Err())
}

// startMember is StartMember, run in a goroutine so that its caller can
// stop waiting.
func startMember(ctx context.Context, cfg MemberConfig) (*Member, error) {
	if cfg.Name == "" {
		cfg.Name = "afloat"
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lock, err := lockDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			lock.Close()
		}
	}()
	var saved struct{ Client, Peer string }
	if data, err := os.ReadFile(filepath.Join(cfg.DataDir, urlsFile)); err == nil {
		json.Unmarshal(data, &saved) //nolint:errcheck // a bad file: choose again
	}
	pick := func(given, kept string) (string, error) {
		if given != "" {
			return given, nil
		}
		if kept != "" {
			return kept, nil
		}
		return freeURL()
	}
	if cfg.ClientURL, err = pick(cfg.ClientURL, saved.Client); err != nil {
		return nil, err
	}
	if cfg.PeerURL, err = pick(cfg.PeerURL, saved.Peer); err != nil {
		return nil, err
	}
	if cfg.CertFile != "" {
		// A port picked or kept as http://: the same port, over TLS.
		if rest, ok := strings.CutPrefix(cfg.ClientURL, "http://"); ok {
			cfg.ClientURL = "https://" + rest
		}
	} else if rest, ok := strings.CutPrefix(cfg.ClientURL, "https://"); ok && saved.Client == cfg.ClientURL {
		cfg.ClientURL = "http://" + rest // kept from a start with TLS
	}
	// Loopback only, unless allowed — checked before the URLs are kept,
	// so that a refused one does not stay in the data directory.
	for _, u := range []struct{ field, url string }{{"client URL", cfg.ClientURL}, {"peer URL", cfg.PeerURL}} {
		if p, err := url.Parse(u.url); err == nil && !cfg.AllowRemote && !hostcheck.ListenLoopback(p.Host) {
			return nil, fmt.Errorf("%w: %s %q: beyond loopback, and the embedded etcd has no authentication or TLS: "+
				"whoever reaches it can rewrite the ledger and the tenants; listen on 127.0.0.1, or run an etcd cluster with "+
				"TLS and auth and give --etcd", ErrConfig, u.field, u.url)
		}
	}
	data, _ := json.Marshal(struct{ Client, Peer string }{cfg.ClientURL, cfg.PeerURL})
	if err := os.WriteFile(filepath.Join(cfg.DataDir, urlsFile), data, 0o600); err != nil {
		return nil, fmt.Errorf("etcdmember: data directory: %w", err)
	}
	if cfg.AdvertisePeerURL == "" {
		cfg.AdvertisePeerURL = cfg.PeerURL
	}
	if cfg.AdvertiseClientURL == "" {
		cfg.AdvertiseClientURL = cfg.ClientURL
	}
	if cfg.InitialCluster == "" {
		cfg.InitialCluster = cfg.Name + "=" + cfg.AdvertisePeerURL
	}
	if cfg.TickMs == 0 {
		cfg.TickMs = 50
	}
	if cfg.ElectionMs == 0 {
		cfg.ElectionMs = 500
	}
	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = filepath.Join(cfg.DataDir, "etcd")
	if err := checkDataDir(ec.Dir); err != nil {
		return nil, err
	}
	parse := func(field, s, scheme string) ([]url.URL, error) {
		u, err := url.Parse(s)
		if err != nil || u.Scheme != scheme || u.Host == "" {
			return nil, fmt.Errorf("%w: %s %q: want %s://host:port", ErrConfig, field, s, scheme)
		}
		return []url.URL{*u}, nil
	}
	clientScheme := "http"
	if cfg.CertFile != "" {
		clientScheme = "https"
		ec.ClientTLSInfo.CertFile, ec.ClientTLSInfo.KeyFile = cfg.CertFile, cfg.KeyFile
		if cfg.ClientCAFile != "" {
			ec.ClientTLSInfo.TrustedCAFile, ec.ClientTLSInfo.ClientCertAuth = cfg.ClientCAFile, true
		}
	}
	if ec.ListenClientUrls, err = parse("client URL", cfg.ClientURL, clientScheme); err != nil {
		return nil, err
	}
	if ec.AdvertiseClientUrls, err = parse("advertised client URL", cfg.AdvertiseClientURL, clientScheme); err != nil {
		return nil, err
	}
	if ec.ListenPeerUrls, err = parse("peer URL", cfg.PeerURL, "http"); err != nil {
		return nil, err
	}
	if ec.AdvertisePeerUrls, err = parse("advertised peer URL", cfg.AdvertisePeerURL, "http"); err != nil {
		return nil, err
	}
	ec.InitialCluster = cfg.InitialCluster
	ec.InitialClusterToken = "afloat-quota"
	ec.TickMs, ec.ElectionMs = cfg.TickMs, cfg.ElectionMs
	if cfg.MaxTxnOps == 0 {
		cfg.MaxTxnOps = DefaultEmbeddedMaxTxnOps
	}
	ec.MaxTxnOps = cfg.MaxTxnOps
	// The ledger compacts what it writes (etcdledger.Config.CompactEvery);
	// this keeps the member's own history bounded too.
	ec.AutoCompactionMode = "revision"
	ec.AutoCompactionRetention = "10000"
	// etcd's own errors go to stderr, except the ones every shutdown
	// prints (its listeners closing), which would read as failures.
	closing := &atomic.Bool{}
	lg := zap.New(quietCore{zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()),
		zapcore.Lock(os.Stderr), zapcore.ErrorLevel), closing})
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	ec.Logger = "zap"
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("etcdmember: starting etcd in %s: %w", ec.Dir, err)
	}
	// A member of its own is ready within a second or two of StartEtcd
	// (which has replayed the WAL by then); a member of a cluster waits
	// for a quorum of its peers.
	wait, why := 20*time.Second, "its data directory may be damaged"
	if strings.Contains(cfg.InitialCluster, ",") {
		wait, why = 60*time.Second, "a cluster waits for a quorum of its members"
	}
	ready := time.NewTimer(wait)
	defer ready.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		closeEtcd(e, closing)
		return nil, fmt.Errorf("etcdmember: etcd: %w", err)
	case <-e.Server.StopNotify():
		closeEtcd(e, closing)
		return nil, errors.New("etcdmember: etcd stopped before it became ready")
	case <-ctx.Done():
		closeEtcd(e, closing)
		return nil, ctx.Err()
	case <-ready.C:
		closeEtcd(e, closing)
		return nil, fmt.Errorf("etcdmember: etcd did not become ready within %v (%s)", wait, why)
	}
	if cfg.RootPassword != "" {
		if err := enableAuth(ctx, e, cfg.RootPassword); err != nil {
			closeEtcd(e, closing)
			return nil, err
		}
	}
	ok = true
	return &Member{etcd: e, lock: lock, closing: closing, ClientURL: cfg.ClientURL}, nil
}

// closeEtcd closes a member that may never have become ready. Close waits
// for the member's client servers before it stops the server, and those
// start only once the server is ready: closing one that never was would
// wait forever. Stopping the server first ends that wait.
// closing silences etcd's logs of its own shutdown, as Member.Close does.
func closeEtcd(e *embed.Etcd, closing *atomic.Bool) {
	closing.Store(true)
	e.Server.HardStop()
	e.Close()
}

// Err reports the member's fatal errors.
func (m *Member) Err() <-chan error { return m.etcd.Err() }

// Close stops the member and releases its data directory.
func (m *Member) Close() {
	m.closing.Store(true)
	m.etcd.Close()
	m.lock.Close()
}

// freeURL is http://127.0.0.1:port with a port free now.
func freeURL() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("etcdmember: finding a free port: %w", err)
	}
	defer l.Close()
	return "http://" + l.Addr().String(), nil
}

// enableAuth creates the user root with password, unless it exists, and
// turns authentication on, unless it is: through the member's own
// in-process client, before any other client could connect without
// credentials for long.
func enableAuth(ctx context.Context, e *embed.Etcd, password string) error {
	c := v3client.New(e.Server)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := c.AuthStatus(ctx)
	if err != nil {
		return fmt.Errorf("etcdmember: auth status: %w", err)
	}
	if st.Enabled {
		return nil // enabled on an earlier start; the password is root's own business now
	}
	if _, err := c.UserAdd(ctx, "root", password); err != nil && !errors.Is(err, rpctypes.ErrUserAlreadyExist) {
		return fmt.Errorf("etcdmember: adding the user root: %w", err)
	}
	if _, err := c.UserGrantRole(ctx, "root", "root"); err != nil {
		return fmt.Errorf("etcdmember: granting root the role root: %w", err)
	}
	if _, err := c.AuthEnable(ctx); err != nil {
		return fmt.Errorf("etcdmember: enabling auth: %w", err)
	}
	return nil
}

// RunMember runs an embedded member until ctx ends (nil, also when ctx
// ends while it starts).
func RunMember(ctx context.Context, cfg MemberConfig) error {
	m, err := StartMember(ctx, cfg)
	if err != nil && ctx.Err() != nil {
		return nil // asked to stop while starting
	}
	if err != nil {
		return err
	}
	defer m.Close()
	if cfg.OnReady != nil {
		cfg.OnReady(m.ClientURL)
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-m.Err():
		return fmt.Errorf("etcdmember: etcd: %w", err)
	}
}

// quietCore drops every entry once its member is closing.
type quietCore struct {
	zapcore.Core
	closing *atomic.Bool
}

func (q quietCore) With(f []zapcore.Field) zapcore.Core {
	return quietCore{q.Core.With(f), q.closing}
}

func (q quietCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if q.closing.Load() || !q.Enabled(e.Level) {
		return ce
	}
	return ce.AddCore(e, q)
}
