//go:build embedetcd

package etcdledger_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/etcdledger"
	"github.com/afloat/afloat/quota/etcdmember"
)

// etcd starts a real single-member etcd for the test and returns a client
// factory.
func etcd(t *testing.T) func() *clientv3.Client {
	t.Helper()
	m, err := etcdmember.StartMember(context.Background(), etcdmember.MemberConfig{Name: "test", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return func() *clientv3.Client {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Close() })
		return cli
	}
}

func open(t *testing.T, cli *clientv3.Client, cluster string) *etcdledger.Ledger {
	t.Helper()
	// These tests depose a leader by Close or by deleting its key, never by
	// the clock: a long session, no deposing by a standby and a long write
	// bound keep a busy machine (make test runs the groups side by side)
	// from deposing a leader or timing out a write that the test needs to
	// land. TestDeadLeaderDeposed and TestSessionLostWhenRevoked test the
	// clocks.
	l, err := etcdledger.Open(context.Background(), etcdledger.Config{Client: cli, Cluster: cluster, Candidate: "http://" + cluster,
		SessionTTL: 30, DeposeAfter: -1, WriteTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestFencingAndRestore: a successor's epoch is higher; the deposed
// leader's writes are refused; the successor reads every lease and credit
// the first wrote, and writes on.
func TestFencingAndRestore(t *testing.T) {
	newClient := etcd(t)
	ctx := context.Background()
	a := open(t, newClient(), "c")
	snap, err := a.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lease := quota.Lease{ID: 1, Tenant: "acme", Region: "eu", Epoch: snap.Epoch, Rate: 5 * quota.One, Burst: 10 * quota.One, Expires: time.Second}
	if err := a.Commit(ctx, snap.Epoch,
		coordinator.Op{Kind: coordinator.PutLease, Lease: &lease},
		coordinator.Op{Kind: coordinator.PutLease, Lease: &quota.Lease{ID: 2, Tenant: "acme", Region: "us"}},
		coordinator.Op{Kind: coordinator.EndLease, ID: 2}, // put and ended in one batch: deleted
		coordinator.Op{Kind: coordinator.SetCredit, Tenant: "acme", Credit: 3 * quota.One},
		coordinator.Op{Kind: coordinator.SetCredit, Tenant: "acme", Credit: 4 * quota.One}, // the last wins
	); err != nil {
		t.Fatal(err)
	}

	b := open(t, newClient(), "c")
	won := make(chan coordinator.Snapshot, 1)
	go func() {
		s, err := b.Fence(ctx) // waits: a leads
		if err != nil {
			t.Error(err)
		}
		won <- s
	}()
	select {
	case <-won:
		t.Fatal("a second ledger won the election while the first leads")
	case <-time.After(300 * time.Millisecond):
	}
	a.Close() // a resigns (a dead leader's session expires within its TTL instead)
	var s2 coordinator.Snapshot
	select {
	case s2 = <-won:
	case <-time.After(10 * time.Second):
		t.Fatal("the successor did not win")
	}
	if s2.Epoch <= snap.Epoch {
		t.Fatalf("epochs %d then %d: want increasing", snap.Epoch, s2.Epoch)
	}
	if len(s2.Leases) != 1 || s2.Leases[0] != lease || s2.Credit["acme"] != 4*quota.One || s2.NextID != 3 {
		t.Fatalf("restored %+v", s2)
	}
	if err := a.Commit(ctx, snap.Epoch, coordinator.Op{Kind: coordinator.PutLease, Lease: &quota.Lease{ID: 9}}); !errors.Is(err, quota.ErrStaleEpoch) {
		t.Fatalf("the deposed leader wrote: %v", err)
	}
	// A leader whose key is gone (its session expired) cannot write even
	// with its own epoch: the guard is in the transaction, in etcd.
	cli := newClient()
	if _, err := cli.Delete(ctx, "/afloat/quota/election/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx, s2.Epoch, coordinator.Op{Kind: coordinator.PutLease, Lease: &quota.Lease{ID: 10}}); !errors.Is(err, quota.ErrStaleEpoch) {
		t.Fatalf("a leader without its key wrote: %v", err)
	}
}

// TestForeignPrefix: a prefix holding another cluster's ledger, or keys
// that are no ledger, is refused with the reason.
func TestForeignPrefix(t *testing.T) {
	newClient := etcd(t)
	ctx := context.Background()
	cli := newClient()
	open(t, cli, "blue")
	_, err := etcdledger.Open(ctx, etcdledger.Config{Client: cli, Cluster: "green"})
	if !errors.Is(err, etcdledger.ErrForeign) {
		t.Fatalf("another cluster's prefix: %v, want ErrForeign", err)
	}
	t.Log(err)
	if _, err := cli.Put(ctx, "/other/app/key", "x"); err != nil {
		t.Fatal(err)
	}
	_, err = etcdledger.Open(ctx, etcdledger.Config{Client: cli, Prefix: "/other/", Cluster: "green"})
	if !errors.Is(err, etcdledger.ErrForeign) {
		t.Fatalf("a prefix with other keys: %v, want ErrForeign", err)
	}
	t.Log(err)
}

// TestTooManyOps: a batch over etcd's limit is refused whole by the
// ledger, before etcd sees it; the server's batches stay under it.
func TestTooManyOps(t *testing.T) {
	newClient := etcd(t)
	ctx := context.Background()
	l := open(t, newClient(), "c")
	snap, err := l.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ops []coordinator.Op
	for i := range l.MaxOps() + 1 {
		ops = append(ops, coordinator.Op{Kind: coordinator.PutLease, Lease: &quota.Lease{ID: uint64(i + 1)}})
	}
	if err := l.Commit(ctx, snap.Epoch, ops...); err == nil {
		t.Fatal("a transaction over the limit was accepted")
	}
	if err := l.Commit(ctx, snap.Epoch, ops[:l.MaxOps()]...); err != nil {
		t.Fatalf("a transaction at the limit: %v", err)
	}
}

// TestHolderSurvivesFence: the region's agent incarnation is written with
// the leases, and a successor that fences the ledger restores it and
// enforces it — the holder renews, incarnation 0 and another agent are
// refused while the restored lease counts — and a detached holder stays
// recorded (incarnation 0 refused).
func TestHolderSurvivesFence(t *testing.T) {
	newClient := etcd(t)
	ctx := context.Background()
	tn := quota.Tenant{Name: "acme", Rate: 100 * quota.One, Burst: 100 * quota.One, Regions: []string{"eu", "us"}}
	a := open(t, newClient(), "c")
	snap, err := a.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, err := coordinator.New(coordinator.Config{Tenants: []quota.Tenant{tn}}, snap, 0)
	if err != nil {
		t.Fatal(err)
	}
	write := func(step coordinator.Step, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Commit(ctx, snap.Epoch, step.Ops...); err != nil {
			t.Fatal(err)
		}
	}
	write(first.Attach(0, "eu", 4242, "host-a:1"))
	write(first.Attach(0, "us", 77, "host-u:1"))
	write(first.Detach(0, "us", 77))
	step, err := first.Renew(0, quota.Request{Tenant: "acme", Region: "eu", Seq: 1, Epoch: snap.Epoch, Incarnation: 4242})
	write(step, err)

	a.Close()
	b := open(t, newClient(), "c")
	s2, err := b.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []coordinator.Holder{{Region: "eu", Incarnation: 4242, Agent: "host-a:1"}, {Region: "us"}}
	if len(s2.Holders) != 2 || s2.Holders[0] != want[0] || s2.Holders[1] != want[1] {
		t.Fatalf("restored holders %+v, want %+v", s2.Holders, want)
	}
	succ, err := coordinator.New(coordinator.Config{Tenants: []quota.Tenant{tn}}, s2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := succ.Attach(time.Second, "eu", 99, "host-b:2"); !errors.Is(err, quota.ErrRegionHeld) {
		t.Fatalf("a second agent attached eu after the fence: %v", err)
	}
	for i, tc := range []struct {
		region string
		inc    uint64
		ok     bool
	}{{"eu", 4242, true}, {"eu", 0, false}, {"eu", 99, false}, {"us", 0, false}, {"us", 77, false}} {
		_, err := succ.Renew(time.Second, quota.Request{Tenant: "acme", Region: tc.region, Seq: uint64(10 + i), Epoch: s2.Epoch, Incarnation: tc.inc})
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, quota.ErrSuperseded)) {
			t.Fatalf("step %d: renewal of %s as incarnation %d after the fence: %v, want ok %v", i, tc.region, tc.inc, err, tc.ok)
		}
	}
}

// TestLeadingOnlyOnceLoaded: Leading names no one before an election; the
// leader, loaded, once it has fenced; and a winner that has not read the
// ledger (here a bare campaign, as a candidate stuck before its read
// would be) as not loaded, though Leader names it — until a ledger fences
// again.
func TestLeadingOnlyOnceLoaded(t *testing.T) {
	newClient := etcd(t)
	ctx := context.Background()
	a := open(t, newClient(), "c")
	if _, _, err := a.Leading(ctx); !errors.Is(err, etcdledger.ErrNotLeader) {
		t.Fatalf("step 0: Leading before any election: %v, want ErrNotLeader", err)
	}
	if _, err := a.Fence(ctx); err != nil {
		t.Fatal(err)
	}
	if addr, loaded, err := a.Leading(ctx); err != nil || addr != "http://c" || !loaded {
		t.Fatalf("step 1: Leading after the fence: %q %v %v, want http://c loaded", addr, loaded, err)
	}
	a.Close() // resigns

	cli := newClient()
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(30))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := concurrency.NewElection(s, "/afloat/quota/election")
	if err := e.Campaign(ctx, "http://stuck"); err != nil {
		t.Fatal(err)
	}
	if addr, err := a.Leader(ctx); err != nil || addr != "http://stuck" {
		t.Fatalf("step 2: Leader: %q %v, want http://stuck", addr, err)
	}
	if addr, loaded, err := a.Leading(ctx); err != nil || addr != "http://stuck" || loaded {
		t.Fatalf("step 2: Leading of a winner that has not read the ledger: %q %v %v, want http://stuck not loaded", addr, loaded, err)
	}
	if err := e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	b := open(t, newClient(), "c")
	if _, err := b.Fence(ctx); err != nil {
		t.Fatal(err)
	}
	if addr, loaded, err := b.Leading(ctx); err != nil || addr != "http://c" || !loaded {
		t.Fatalf("step 3: Leading after the successor's fence: %q %v %v, want http://c loaded", addr, loaded, err)
	}
}

// TestFenceReadsInPages: a successor reads a ledger larger than a page of
// the fence's read (5,000 keys) whole — every lease and tenant, across the
// pages' boundaries, none twice.
func TestFenceReadsInPages(t *testing.T) {
	newClient := etcd(t)
	ctx := context.Background()
	a := open(t, newClient(), "c")
	snap, err := a.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const leases, tenants = 12_001, 12_000
	var ops []coordinator.Op
	flush := func() {
		for len(ops) > 0 {
			k := min(len(ops), a.MaxOps())
			if err := a.Commit(ctx, snap.Epoch, ops[:k]...); err != nil {
				t.Fatal(err)
			}
			ops = ops[k:]
		}
	}
	for i := range leases {
		ops = append(ops, coordinator.Op{Kind: coordinator.PutLease, Lease: &quota.Lease{ID: uint64(i + 1), Tenant: fmt.Sprintf("t%05d", i%tenants), Region: "eu", Epoch: snap.Epoch}})
	}
	for i := range tenants {
		name := fmt.Sprintf("t%05d", i)
		ops = append(ops, coordinator.Op{Kind: coordinator.PutTenant, Tenant: name,
			Record: &coordinator.TenantRecord{Tenant: quota.Tenant{Name: name, Rate: quota.One, Burst: quota.One}, Version: 1}})
	}
	flush()
	b := open(t, newClient(), "c")
	a.Close()
	s2, err := b.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s2.Leases) != leases || len(s2.Tenants) != tenants {
		t.Fatalf("the successor read %d leases and %d tenants, want %d and %d", len(s2.Leases), len(s2.Tenants), leases, tenants)
	}
	ids := map[uint64]bool{}
	for _, l := range s2.Leases {
		ids[l.ID] = true
	}
	names := map[string]bool{}
	for _, r := range s2.Tenants {
		names[r.Name] = true
	}
	if len(ids) != leases || len(names) != tenants || s2.NextID != leases+1 {
		t.Fatalf("%d distinct leases, %d distinct tenants, next ID %d: want %d, %d, %d", len(ids), len(names), s2.NextID, leases, tenants, leases+1)
	}
}
