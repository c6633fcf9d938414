//go:build embedetcd

package etcdledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/etcdmember"
)

// Writes of unknown outcome against a real etcd: the transaction reaches
// etcd (or not, or late) and the client reports context.Canceled, as it
// does when a coordinator's context is cancelled at SIGTERM while etcd
// commits. Resolve must tell which, and a late one must never land after
// it has answered.

// fate is what the next transaction does: reach etcd and be answered
// cancelled (landed), never be sent (lost), or be held and sent after the
// client was told cancelled (late).
type fate int

const (
	honest fate = iota
	landed
	lost
	late
)

// tamper sits between the ledger's etcd client and etcd, on the
// transactions only.
type tamper struct {
	mu   sync.Mutex
	next []fate
	held func() // the late transaction, to send
}

func (tp *tamper) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if method != "/etcdserverpb.KV/Txn" {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	tp.mu.Lock()
	f := honest
	if len(tp.next) > 0 {
		f, tp.next = tp.next[0], tp.next[1:]
	}
	tp.mu.Unlock()
	switch f {
	case landed:
		if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
			return err
		}
		return context.Canceled
	case lost:
		return context.Canceled
	case late:
		tp.mu.Lock()
		tp.held = func() {
			invoker(context.WithoutCancel(ctx), method, req, reply, cc, opts...) //nolint:errcheck // its fate is read from etcd
		}
		tp.mu.Unlock()
		return context.Canceled
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (tp *tamper) then(f ...fate) { tp.mu.Lock(); tp.next = append(tp.next, f...); tp.mu.Unlock() }

func (tp *tamper) release() {
	tp.mu.Lock()
	h := tp.held
	tp.held = nil
	tp.mu.Unlock()
	h()
}

// TestUnknownOutcomeResolved: each fate of a cancelled transaction,
// settled by Resolve: one that landed is reported applied and its lease
// is there; one never sent is reported not applied, and one sent after
// Resolve answered is refused by etcd (the chain moved), so the ledger
// never holds what Resolve said it does not. Meanwhile the ledger takes
// no other write. Then a successor restores exactly what was applied.
func TestUnknownOutcomeResolved(t *testing.T) {
	tp, cli := tamperedClient(t)
	ctx := context.Background()
	l := open(t, cli, "c")
	snap, err := l.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	put := func(id uint64) coordinator.Op {
		return coordinator.Op{Kind: coordinator.PutLease, Lease: &quota.Lease{ID: id, Tenant: "acme", Region: "eu", Epoch: snap.Epoch}}
	}
	want := map[uint64]bool{}
	for i, tc := range []struct {
		fate    fate
		applied bool
	}{{landed, true}, {lost, false}, {late, false}, {honest, true}, {landed, true}} {
		id := uint64(i + 1)
		tp.then(tc.fate)
		err := l.Commit(ctx, snap.Epoch, put(id))
		if tc.fate == honest {
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			want[id] = true
			continue
		}
		if !errors.Is(err, coordinator.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
			t.Fatalf("step %d: Commit = %v; want ErrOutcomeUnknown wrapping context.Canceled", i, err)
		}
		if err := l.Commit(ctx, snap.Epoch, put(100+id)); err == nil || errors.Is(err, coordinator.ErrOutcomeUnknown) {
			t.Fatalf("step %d: a write while one is unsettled: %v; want it refused", i, err)
		}
		applied, err := l.Resolve(ctx, snap.Epoch)
		if err != nil || applied != tc.applied {
			t.Fatalf("step %d: Resolve = %v, %v; want %v", i, applied, err, tc.applied)
		}
		if tc.fate == late {
			tp.release() // etcd gets it now, after the answer
		}
		want[id] = tc.applied
	}
	l.Close()
	succ := open(t, cli, "c")
	s2, err := succ.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint64]bool{}
	for _, ls := range s2.Leases {
		got[ls.ID] = true
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("lease %d restored %v; Resolve said applied %v", id, got[id], w)
		}
	}
	for id := range got {
		if id > 100 {
			t.Errorf("lease %d, refused while a write was unsettled, is in the ledger", id)
		}
	}
}

// TestCancelRacingCommit: transactions whose context is cancelled at
// random instants around etcd's commit — the SIGTERM of the report.
// Whatever Commit says, after Resolve the ledger holds a lease exactly
// when it was reported written.
func TestCancelRacingCommit(t *testing.T) {
	newClient := etcd(t)
	ctx := context.Background()
	cli := newClient()
	l := open(t, cli, "c")
	snap, err := l.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var unknown, landedN int
	reported := map[uint64]bool{}
	for i := range 200 {
		id := uint64(i + 1)
		wctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(time.Duration(i%40)*50*time.Microsecond, cancel)
		err := l.Commit(wctx, snap.Epoch, coordinator.Op{Kind: coordinator.PutLease, Lease: &quota.Lease{ID: id, Tenant: "acme", Region: "eu"}})
		cancel()
		switch {
		case err == nil:
			reported[id] = true
		case errors.Is(err, coordinator.ErrOutcomeUnknown):
			unknown++
			applied, err := l.Resolve(ctx, snap.Epoch)
			if err != nil {
				t.Fatalf("write %d: Resolve: %v", id, err)
			}
			reported[id] = applied
			if applied {
				landedN++
			}
		default:
			t.Fatalf("write %d: %v", id, err)
		}
	}
	resp, err := cli.Get(ctx, "/afloat/quota/lease/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, kv := range resp.Kvs {
		held[string(kv.Key)] = true
	}
	for id, r := range reported {
		if k := fmt.Sprintf("/afloat/quota/lease/%020d", id); held[k] != r {
			t.Errorf("lease %d: in etcd %v, reported written %v", id, held[k], r)
		}
	}
	t.Logf("%d writes of unknown outcome, %d of them had landed", unknown, landedN)
	if unknown == 0 {
		t.Log("no cancellation raced a commit this run (the instants missed): the test proved little")
	}
}

// TestServerSettlesOnEtcd: the coordinator on the real ledger, a
// region's return landing in etcd and reported cancelled: the return is
// done (its credit recorded), the tokens go once to the next region, and
// a successor restores what is left — none granted twice, none lost.
func TestServerSettlesOnEtcd(t *testing.T) {
	tp, cli := tamperedClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tn := quota.Tenant{Name: "acme", Rate: 500 * quota.One, Burst: 6000 * quota.One, Regions: []string{"eu", "us"}}
	j := &credits{}
	l := open(t, cli, "c")
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: []quota.Tenant{tn}}, l, coordinator.WithJournal(j))
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx) }()
	g, err := srv.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: 1, Demand: 400 * quota.One})
	if err != nil {
		t.Fatal(err)
	}
	tp.then(landed)
	ret := quota.Return{Tenant: "acme", Region: "eu", LeaseID: g.Lease.ID, Balance: g.Lease.Burst / 2}
	if err := srv.Return(ctx, ret); err != nil {
		t.Fatalf("a return that landed and was reported cancelled: %v; want it done", err)
	}
	us, err := srv.Renew(ctx, quota.Request{Tenant: "acme", Region: "us", Seq: 2, Demand: 400 * quota.One})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-ran
	l.Close()
	succ := open(t, cli, "c")
	s2, err := succ.Fence(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	credited := j.total()
	if credited != ret.Balance || us.Lease.Transfer+s2.Credit["acme"] != credited {
		t.Fatalf("credited %v (the return's balance %v), transferred %v, left in etcd %v: want transferred + left = credited = the balance",
			credited, ret.Balance, us.Lease.Transfer, s2.Credit["acme"])
	}
	if st := srv.Stats(); st.Unknown != 1 || st.Landed != 1 {
		t.Fatalf("stats %+v: want 1 write of unknown outcome, landed", st)
	}
}

// credits is a journal that adds up the returns' credit.
type credits struct {
	mu  sync.Mutex
	sum quota.Micro
}

func (c *credits) Append(entries []coordinator.Entry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range entries {
		c.sum += e.Step.Credit
	}
	return nil
}

func (c *credits) total() quota.Micro { c.mu.Lock(); defer c.mu.Unlock(); return c.sum }

// tamperedClient starts an embedded etcd member and returns a client
// whose transactions pass through a tamper, which decides their fate.
func tamperedClient(t *testing.T) (*tamper, *clientv3.Client) {
	t.Helper()
	m, err := etcdmember.StartMember(context.Background(), etcdmember.MemberConfig{Name: "test", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	tp := &tamper{}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(tp.intercept)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return tp, cli
}
