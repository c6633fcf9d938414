package replica

import (
	"context"
	"io"
	"time"

	"github.com/afloat/afloat/quota/etcdledger"
)

// Backup writes a snapshot of the etcd the coordinators of o use to w —
// the embedded member in o.DataDir when o names no etcd, which must not be
// running then (its directory is locked: use Backup on a running
// coordinator's member through its client URL, as --etcd) — and returns
// its size. The file is etcd's own (etcdctl snapshot save writes the
// same): Restore, etcdctl or etcdutl can restore it.
func Backup(ctx context.Context, o Options, w io.Writer) (int64, error) {
	r, err := o.resolve()
	if err != nil {
		return 0, err
	}
	cli, _, closeEtcd, err := connect(ctx, o, r, "quota backup")
	if err != nil {
		return 0, err
	}
	defer closeEtcd()
	return etcdledger.Backup(ctx, cli, w)
}

// Restore writes the ledger held in the etcd snapshot at path back into
// the etcd the coordinators of o use (etcdledger.Restore) — the embedded
// member in o.DataDir when o names no etcd: the coordinator that runs it
// must be stopped (its directory is locked) — marked restored, so that
// the coordinator that leads next waits out the leases the snapshot may
// lack before it grants. wait is a longer lease than any the ledger
// names (0: none).
func Restore(ctx context.Context, o Options, path string, wait time.Duration) (etcdledger.RestoreReport, error) {
	r, err := o.resolve()
	if err != nil {
		return etcdledger.RestoreReport{}, err
	}
	cli, maxOps, closeEtcd, err := connect(ctx, o, r, "quota restore")
	if err != nil {
		return etcdledger.RestoreReport{}, err
	}
	defer closeEtcd()
	return etcdledger.Restore(ctx, etcdledger.Config{Client: cli, Prefix: o.Config.Etcd.Prefix, Cluster: o.Config.Cluster, MaxTxnOps: maxOps},
		path, wait, time.Now())
}
