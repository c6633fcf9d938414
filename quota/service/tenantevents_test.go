package service

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/chaos"
	"github.com/afloat/afloat/quota/coordinator"
)

// TestTenantEvents: a change reaches the event log as a tenant event with
// who made it, and a cut credit as a negative credit, readable back.
func TestTenantEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	l, err := OpenEventLog(path)
	if err != nil {
		t.Fatal(err)
	}
	acme := quota.Tenant{Name: "acme", Rate: 60 * quota.One, Burst: 120 * quota.One, Regions: []string{"eu", "us"},
		Mode: quota.BestEffort, Emergency: 5 * quota.One}
	l.tenantEvent(1000, &coordinator.TenantChange{Op: "update", By: "alice", New: acme, Dropped: 30 * quota.One})
	l.tenantEvent(2000, &coordinator.TenantChange{Op: "delete", By: "bob", Old: acme})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got collected
	if err := chaos.ReadLog(f, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d events: %+v", len(got), got)
	}
	u, c, d := got[0], got[1], got[2]
	if u.Ev != "tenant" || u.Why != "update" || u.By != "alice" || u.Rate != acme.Rate || u.Burst != acme.Burst ||
		u.N != 2 || u.Mode != "best-effort" || u.Balance != acme.Emergency {
		t.Fatalf("update: %+v", u)
	}
	if c.Ev != "credit" || c.Balance != -30*quota.One || c.Tenant != "acme" {
		t.Fatalf("cut credit: %+v", c)
	}
	if d.Ev != "tenant" || d.Why != "delete" || d.By != "bob" || d.Rate != acme.Rate {
		t.Fatalf("delete: %+v", d)
	}
}

type collected []chaos.Event

func (c *collected) Write(e *chaos.Event) { *c = append(*c, *e) }
