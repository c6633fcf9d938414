//go:build embedetcd

package replica_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/etcdledger"
	"github.com/afloat/afloat/quota/etcdmember"
	"github.com/afloat/afloat/quota/internal/opstest"
)

// TestBackupRestoreDataDir: afloat quota backup and restore with
// --data-dir, the zero-setup coordinator's path: each starts the
// embedded member in the directory (its coordinator stopped), and the
// restore brings back the ledger of the backup, marked; while the
// member runs in another process (here: the test's), the directory is
// refused as in use rather than opened twice.
func TestBackupRestoreDataDir(t *testing.T) {
	ctx := context.Background()
	cfg := opstest.MustConfig(t, opstest.ConfigFile("good.yaml"))
	dir := t.TempDir()
	// A ledger with a tenant, written through the member as a coordinator would.
	withLedger := func(f func(l *etcdledger.Ledger, cli *clientv3.Client)) {
		m, err := etcdmember.StartMember(ctx, etcdmember.MemberConfig{Name: "afloat", DataDir: dir})
		opstest.Must(t, err)
		defer m.Close()
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		opstest.Must(t, err)
		defer cli.Close()
		l, err := etcdledger.Open(ctx, etcdledger.Config{Client: cli, Prefix: cfg.Etcd.Prefix, Cluster: cfg.Cluster, SessionTTL: 30, DeposeAfter: -1})
		opstest.Must(t, err)
		defer l.Close()
		f(l, cli)
	}
	withLedger(func(l *etcdledger.Ledger, _ *clientv3.Client) {
		snap, err := l.Fence(ctx)
		opstest.Must(t, err)
		opstest.Must(t, l.Commit(ctx, snap.Epoch, coordinator.Op{Kind: coordinator.PutTenant, Tenant: "acme",
			Record: &coordinator.TenantRecord{Tenant: quota.Tenant{Name: "acme", Rate: quota.One, Burst: quota.One, LeaseDuration: 4 * time.Second}, Version: 1}}))
		opstest.Must(t, l.Close())
	})
	o := replica.Options{Config: cfg, DataDir: dir, Listen: "127.0.0.1:0", Logger: opstest.QuietLog()}
	file := filepath.Join(t.TempDir(), "ledger.db")
	f, err := os.Create(file)
	opstest.Must(t, err)
	if _, err := replica.Backup(ctx, o, f); err != nil {
		t.Fatal(err)
	}
	opstest.Must(t, f.Close())
	rep, err := replica.Restore(ctx, o, file, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tenants != 1 || rep.Wait != 4*time.Second+quota.DefaultSkewMargin {
		t.Fatalf("step 1: restored %+v: want the tenant and a wait of its lease and margin", rep)
	}
	withLedger(func(l *etcdledger.Ledger, cli *clientv3.Client) {
		snap, err := l.Fence(ctx)
		opstest.Must(t, err)
		if snap.Restored == nil || len(snap.Tenants) != 1 {
			t.Fatalf("step 2: the ledger after the restore: mark %+v, tenants %v", snap.Restored, snap.Tenants)
		}
		// The member runs: the directory is in use.
		_, err = replica.Restore(ctx, o, file, 0)
		if err == nil || errors.Is(err, etcdledger.ErrLeading) || !strings.Contains(err.Error(), "in use") {
			t.Fatalf("step 3: a restore into a running member's directory: %v, want it refused as in use", err)
		}
		t.Logf("step 3: %v", err)
	})
}
