//go:build embedetcd

package etcdledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
)

// TestTenantsFenced: tenants written by the leader are in the
// successor's snapshot, with the seed mark; a deleted one is gone; the
// deposed leader can write no tenant.
func TestTenantsFenced(t *testing.T) {
	newClient := etcd(t)
	ctx := context.Background()
	a := open(t, newClient(), "c")
	snap, err := a.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Seeded || len(snap.Tenants) != 0 {
		t.Fatalf("a new ledger: %+v", snap)
	}
	acme := coordinator.TenantRecord{Tenant: quota.Tenant{Name: "acme", Rate: 5 * quota.One, Burst: 50 * quota.One,
		Regions: []string{"eu"}, LeaseDuration: time.Second}.WithDefaults(), Version: 3, By: "alice"}
	beta := acme
	beta.Name = "beta"
	if err := a.Commit(ctx, snap.Epoch,
		coordinator.Op{Kind: coordinator.PutTenant, Tenant: "acme", Record: &acme},
		coordinator.Op{Kind: coordinator.PutTenant, Tenant: "beta", Record: &beta},
		coordinator.Op{Kind: coordinator.DeleteTenant, Tenant: "beta"},
		coordinator.Op{Kind: coordinator.MarkSeeded},
	); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(ctx, snap.Epoch, coordinator.Op{Kind: coordinator.PutTenant, Tenant: "x", Record: &acme}); err == nil {
		t.Fatal("a record under another name was written")
	}
	a.Close()
	b := open(t, newClient(), "c")
	s2, err := b.Fence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !s2.Seeded || len(s2.Tenants) != 1 || s2.Tenants[0].Name != "acme" || s2.Tenants[0].Version != 3 ||
		s2.Tenants[0].By != "alice" || s2.Tenants[0].Rate != acme.Rate || s2.Tenants[0].LeaseDuration != time.Second {
		t.Fatalf("restored %+v", s2)
	}
	if err := a.Commit(ctx, snap.Epoch, coordinator.Op{Kind: coordinator.DeleteTenant, Tenant: "acme"}); !errors.Is(err, quota.ErrStaleEpoch) {
		t.Fatalf("the deposed leader deleted a tenant: %v", err)
	}
}
