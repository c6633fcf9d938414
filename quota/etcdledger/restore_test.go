//go:build embedetcd

package etcdledger_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/etcdledger"
)

// TestBackupAndRestore: a snapshot taken before a lease was granted,
// restored into the same etcd, brings the ledger back as it was — without
// that lease — marked restored, with the next lease ID above every one
// granted since; the mark holds the longest lease known; a leader clears
// it; a restore while a coordinator leads is refused, and so is a
// damaged snapshot.
func TestBackupAndRestore(t *testing.T) {
	newClient := etcd(t)
	ctx := context.Background()
	cli := newClient()
	a := open(t, cli, "c")
	snap, err := a.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tenant := quota.Tenant{Name: "acme", Rate: quota.One, Burst: quota.One, LeaseDuration: 20 * time.Second}
	lease := func(id uint64) quota.Lease {
		return quota.Lease{ID: id, Tenant: "acme", Region: "eu", Epoch: snap.Epoch, Rate: quota.One, Burst: quota.One, Expires: 3 * time.Second}
	}
	if err := a.Commit(ctx, snap.Epoch, coordinator.Op{Kind: coordinator.PutTenant, Tenant: "acme", Record: &coordinator.TenantRecord{Tenant: tenant, Version: 1}},
		coordinator.Op{Kind: coordinator.PutLease, Lease: new(lease(1))}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "snap.db")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := etcdledger.Backup(ctx, cli, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := a.Commit(ctx, snap.Epoch, coordinator.Op{Kind: coordinator.PutLease, Lease: new(lease(7))}, coordinator.Op{Kind: coordinator.EndLease, ID: 1}); err != nil {
		t.Fatal(err)
	}
	cfg := etcdledger.Config{Client: cli, Cluster: "c"}
	if _, err := etcdledger.Restore(ctx, cfg, file, 0, time.Now()); !errors.Is(err, etcdledger.ErrLeading) {
		t.Fatalf("step 1: a restore while a coordinator leads: %v, want ErrLeading", err)
	}
	a.Close()
	rep, err := etcdledger.Restore(ctx, cfg, file, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Leases != 1 || rep.Tenants != 1 || rep.NextID != 8 || rep.Wait != 20*time.Second+quota.DefaultSkewMargin {
		t.Fatalf("step 2: restored %+v: want lease 1 and the tenant back, next ID 8, a wait of 20.5 s", rep)
	}
	b := open(t, cli, "c")
	got, err := b.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Leases) != 1 || got.Leases[0].ID != 1 || got.NextID != 8 || got.Restored == nil || got.Restored.Wait != rep.Wait {
		t.Fatalf("step 3: the restored ledger: leases %v, next ID %d, mark %+v", got.Leases, got.NextID, got.Restored)
	}
	if got.Epoch <= snap.Epoch {
		t.Fatalf("step 4: epoch %d after %d: epochs only rise in the same etcd", got.Epoch, snap.Epoch)
	}
	if err := b.Commit(ctx, got.Epoch, coordinator.Op{Kind: coordinator.ClearRestored}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	c := open(t, cli, "c")
	if again, err := c.Fence(ctx); err != nil || again.Restored != nil {
		t.Fatalf("step 5: after the clear: mark %+v, %v", again.Restored, err)
	}
	c.Close()
	// A damaged copy is refused before anything is written.
	raw, _ := os.ReadFile(file)
	raw[len(raw)/2] ^= 0xff
	bad := filepath.Join(t.TempDir(), "bad.db")
	os.WriteFile(bad, raw, 0o600)
	if _, err := etcdledger.Restore(ctx, cfg, bad, 0, time.Now()); !errors.Is(err, etcdledger.ErrSnapshot) {
		t.Fatalf("step 6: a damaged snapshot: %v, want ErrSnapshot", err)
	}
	if _, err := etcdledger.Restore(ctx, etcdledger.Config{Client: cli, Cluster: "other"}, file, 0, time.Now()); !errors.Is(err, etcdledger.ErrForeign) {
		t.Fatalf("step 7: another cluster's snapshot: %v, want ErrForeign", err)
	}
}
