//go:build embedetcd

package replica

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/etcdledger"
	"github.com/afloat/afloat/quota/etcdmember"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/remote"
)

// TestBenchRenewals: 10,000 tenants × 3 regions renewing over the network
// API against a coordinator on an embedded etcd, every grant written
// before it is answered; beside it, in the same run, the sequential rate
// of single-write transactions of the same etcd. Target: ≥ 5,000
// renewals a second with p99 ≤ 50 ms.
func TestBenchRenewals(t *testing.T) {
	opstest.BenchOnly(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, err := etcdmember.StartMember(ctx, etcdmember.MemberConfig{Name: "bench", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	// The floor: one Put per transaction, one at a time, guarded as ours.
	calls := 0
	seqRate := func() string {
		calls++
		key := "/bench/guard" + strconv.Itoa(calls)
		put, err := cli.Put(ctx, key, "x")
		if err != nil {
			t.Fatal(err)
		}
		rev := put.Header.Revision
		start := time.Now()
		n := 0
		for time.Since(start) < 3*time.Second {
			resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).
				Then(clientv3.OpPut("/bench/k"+strconv.Itoa(n%1000), "v")).Commit()
			if err != nil || !resp.Succeeded {
				t.Fatal(err)
			}
			n++
		}
		return fmt.Sprintf("%d single-write txns in 3 s = %.0f/s sequential", n, float64(n)/time.Since(start).Seconds())
	}
	before := seqRate()

	cfg := manyTenants(10_000)
	ledger, err := etcdledger.Open(ctx, etcdledger.Config{Client: cli, Cluster: "bench", MaxTxnOps: etcdmember.DefaultEmbeddedMaxTxnOps})
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	timed := &timedLedger{Ledger: ledger}
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: cfg.QuotaTenants()}, timed)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Run(ctx)
	h, _ := remote.Handler(remote.HandlerConfig{Tokens: cfg.Tokens(), Lead: func() (remote.Backend, string) { return srv, "" },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go http.Serve(ln, h)
	base := "http://" + ln.Addr().String()

	// Every pair's first lease (30,000 grants), then the steady state: a
	// renewal every 5 s (half a 10 s lease) for each of 30,000 pairs is
	// 6,000 a second.
	fmt.Printf("renewals, first leases: %s; %s\n", renewLoad(t, base, cfg, srv, 6000, 5*time.Second), timed.take())
	fmt.Printf("renewals, steady: %s; %s\n", renewLoad(t, base, cfg, srv, 6000, 10*time.Second), timed.take())
	fmt.Printf("etcd floor, before: %s\n", before)
	fmt.Printf("etcd floor, after: %s\n", seqRate())
}

// renewLoad drives renewals of tenants × regions through the network API
// at rate a second for d, each pair renewing its newest lease (so that
// every renewal also ends the lease it confirms), and reports what the
// server wrote.
func renewLoad(t *testing.T, base string, cfg *config.Config, srv *coordinator.Server, rate float64, d time.Duration) string {
	t.Helper()
	regions := []string{"eu", "us", "ap"}
	clients := map[string]*remote.Client{}
	for _, r := range regions {
		c, err := remote.NewClient(remote.ClientConfig{Endpoints: []string{base}, Region: r, Token: cfg.Regions[r].Token,
			HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 10 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		clients[r] = c
	}
	type pair struct {
		mu      sync.Mutex
		seq     uint64
		holding uint64
	}
	tenants := cfg.QuotaTenants()
	pairs := make([]pair, len(tenants)*len(regions))
	call := func(i int) error {
		k := i % len(pairs)
		p := &pairs[k]
		p.mu.Lock()
		p.seq++
		req := quota.Request{Tenant: tenants[k/len(regions)].Name, Region: regions[k%len(regions)], Seq: p.seq,
			Holding: p.holding, Demand: 100 * quota.One, Epoch: 0}
		p.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		g, err := clients[req.Region].Renew(ctx, req)
		if err != nil {
			return err
		}
		p.mu.Lock()
		p.holding = max(p.holding, g.Lease.ID)
		p.mu.Unlock()
		return nil
	}
	before := srv.Stats()
	lat, lag, failed, elapsed := opstest.OpenLoop(rate, d, 2048, call)
	after := srv.Stats()
	txns, ops := after.Txns-before.Txns, after.Ops-before.Ops
	return fmt.Sprintf("%d renewals in %v = %.0f/s (offered %.0f/s), %d failed; latency p50 %v p99 %v max %v; sends behind schedule p99 %v; %d etcd txns = %.0f/s, %.1f ops/txn",
		len(lat), elapsed.Round(time.Millisecond), float64(len(lat))/elapsed.Seconds(), rate, failed,
		opstest.Pct(lat, 0.5), opstest.Pct(lat, 0.99), opstest.Pct(lat, 1), opstest.Pct(lag, 0.99), txns, float64(txns)/elapsed.Seconds(), float64(ops)/max(1, float64(txns)))
}

// manyTenants is a config of n tenants in three regions.
func manyTenants(n int) *config.Config {
	var b strings.Builder
	b.WriteString("regions:\n  eu: {token: \"eu-token-0123456789\"}\n  us: {token: \"us-token-0123456789\"}\n  ap: {token: \"ap-token-0123456789\"}\ntenants:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {name: t%05d, rate: 100, burst: 200}\n", i)
	}
	cfg, err := config.ParseConfig([]byte(b.String()))
	if err != nil {
		panic(err)
	}
	return cfg
}

// timedLedger times each write to etcd: where a renewal's latency goes.
type timedLedger struct {
	*etcdledger.Ledger
	mu  sync.Mutex
	lat []time.Duration
}

func (l *timedLedger) Commit(ctx context.Context, epoch uint64, ops ...coordinator.Op) error {
	t0 := time.Now()
	err := l.Ledger.Commit(ctx, epoch, ops...)
	l.mu.Lock()
	l.lat = append(l.lat, time.Since(t0))
	l.mu.Unlock()
	return err
}

// take reports the writes' latencies since the last call.
func (l *timedLedger) take() string {
	l.mu.Lock()
	lat := l.lat
	l.lat = nil
	l.mu.Unlock()
	slices.Sort(lat)
	return fmt.Sprintf("etcd txn latency p50 %v p99 %v max %v", opstest.Pct(lat, 0.5), opstest.Pct(lat, 0.99), opstest.Pct(lat, 1))
}
