//go:build embedetcd

package etcdledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/etcdledger"
)

// TestDeadLeaderDeposed: a leader whose keep-alives stop (its process
// killed: the client closed, the lease not revoked) is deposed by the
// replica campaigning behind it once etcd counts its lease more than
// DeposeAfter stale — long before the lease's 30 s TTL — and its writes
// are refused from then on. While the leader lives, the replica behind it
// does not win.
func TestDeadLeaderDeposed(t *testing.T) {
	newClient := etcd(t)
	ctx := context.Background()
	cfg := func(cli *clientv3.Client) etcdledger.Config {
		return etcdledger.Config{Client: cli, Cluster: "c", Candidate: "http://c", SessionTTL: 30}
	}
	cliA := newClient()
	a, err := etcdledger.Open(ctx, cfg(cliA))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := a.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := etcdledger.Open(ctx, cfg(newClient()))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	bctx, cancel := context.WithTimeout(ctx, 15*time.Second) // half the TTL
	defer cancel()
	won := make(chan coordinator.Snapshot, 1)
	go func() {
		s, err := b.Fence(bctx)
		if err != nil {
			t.Error(err)
		}
		won <- s
	}()
	// Longer than DeposeAfter (1 s) and a read of the lease (every
	// 100 ms) with room: a live leader is not deposed.
	select {
	case <-won:
		t.Fatal("the replica behind a live leader won the election")
	case <-time.After(1600 * time.Millisecond):
	}
	select {
	case <-a.Lost():
		t.Fatalf("the live leader's session ended: %v", a.LostErr())
	default:
	}

	cliA.Close() // the leader dies: no keep-alive, no revocation
	killed := time.Now()
	s2 := <-won
	if s2.Epoch <= snap.Epoch {
		t.Fatalf("epochs %d then %d: want increasing", snap.Epoch, s2.Epoch)
	}
	t.Logf("the successor led %v after the leader's death (session TTL 30 s, depose after 1 s)", time.Since(killed).Round(time.Millisecond))
	if err := b.Commit(ctx, s2.Epoch, coordinator.Op{Kind: coordinator.SetCredit, Tenant: "acme", Credit: 1}); err != nil {
		t.Fatalf("the successor's write: %v", err)
	}
	// a is not closed: a killed process does not resign; its ledger's
	// keep-alive gives up with the test binary.
}

// TestSessionLostWhenRevoked: a leader whose lease is revoked (a successor
// judged it stale) learns from etcd's answer to its next keep-alive, not
// after its TTL, and says why.
func TestSessionLostWhenRevoked(t *testing.T) {
	newClient := etcd(t)
	ctx := context.Background()
	cli := newClient()
	l, err := etcdledger.Open(ctx, etcdledger.Config{Client: cli, Cluster: "c", Candidate: "http://c", SessionTTL: 30})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Fence(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, "/afloat/quota/election/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("election keys %v, %v: want one", resp, err)
	}
	if _, err := newClient().Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("the session outlived its revoked lease by 10 s")
	}
	if err := l.LostErr(); !errors.Is(err, etcdledger.ErrSessionLost) {
		t.Fatalf("LostErr %v: want ErrSessionLost", err)
	}
	t.Log(l.LostErr())
}
