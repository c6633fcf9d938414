package etcdledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
)

// Errors of Backup and Restore.
var (
	// ErrSnapshot: the file is not an etcd snapshot this package can read
	// (not a bbolt database with etcd's key bucket, or its checksum
	// does not match), or it holds no ledger under the prefix.
	ErrSnapshot = errors.New("etcdledger: not a usable etcd snapshot")
	// ErrLeading: a coordinator campaigns or leads on the prefix. A
	// restore under it would change the ledger behind the leader's back:
	// stop every coordinator first.
	ErrLeading = errors.New("etcdledger: a coordinator campaigns or leads: stop every coordinator before restoring")
)

// Backup writes a snapshot of the whole etcd keyspace to w, as
// `etcdctl snapshot save` does (the same file: etcd's bbolt database
// and its SHA-256), and returns its size. It reads through one member.
func Backup(ctx context.Context, cli *clientv3.Client, w io.Writer) (int64, error) {
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		return 0, fmt.Errorf("etcdledger: snapshot: %w", err)
	}
	defer rc.Close()
	n, err := io.Copy(w, rc)
	if err != nil {
		return n, fmt.Errorf("etcdledger: snapshot: %w", err)
	}
	return n, nil
}

// RestoreReport says what Restore found and wrote.
type RestoreReport struct {
	// Revision is the newest etcd revision in the snapshot.
	Revision int64 `json:"revision"`
	// Keys is how many of the ledger's keys were written back.
	Keys    int `json:"keys"`
	Leases  int `json:"leases"`
	Tenants int `json:"tenants"`
	Holders int `json:"holders"`
	// NextID is the next lease ID written: above both the snapshot's and
	// the etcd's, since a region never installs a lease whose ID is not
	// above the one it holds.
	NextID uint64 `json:"next_id"`
	// Wait is the longest lease the restore knew of, written into the
	// mark: the restored leader waits at least this long before it grants
	// (coordinator.Restored).
	Wait time.Duration `json:"wait_ns"`
}

// Restore writes the ledger held in the etcd snapshot file at path
// (Backup's, or `etcdctl snapshot save`'s) back under the prefix of the
// etcd cfg.Client reaches — the cluster it was taken from, or a new one —
// replacing what is there, and marks it restored: the coordinator that
// leads next grants nothing until every lease the snapshot may lack has
// run out (coordinator.Restored says why). wait is the longest lease
// duration and skew margin of any tenant since the snapshot, if longer
// than the ones Restore sees (the snapshot's tenants and the etcd's);
// 0 for those. The lease IDs go on from above the etcd's own, as a region
// needs them to.
//
// No coordinator may campaign or lead meanwhile (ErrLeading): the ledger
// is written in transactions of at most cfg.MaxTxnOps, each refused once
// a coordinator campaigns; the first replaces everything and writes the
// mark, so a ledger whose restore failed halfway is still marked, and a
// second Restore makes it whole. The election, the write chain and the
// mark of an earlier restore are not taken from the snapshot.
func Restore(ctx context.Context, cfg Config, path string, wait time.Duration, at time.Time) (RestoreReport, error) {
	if err := cfg.Validate(); err != nil {
		return RestoreReport{}, err
	}
	if wait < 0 || wait > 24*time.Hour {
		return RestoreReport{}, fmt.Errorf("%w: etcdledger: restore wait %v: want 0 to 24h", quota.ErrConfig, wait)
	}
	cfg = cfg.withDefaults()
	p := cfg.Prefix
	kvs, rev, err := readSnapshot(path, p)
	if err != nil {
		return RestoreReport{}, err
	}
	meta, _ := json.Marshal(struct {
		Format  string `json:"format"`
		Cluster string `json:"cluster"`
	}{format, cfg.Cluster})
	if got, ok := kvs[p+"meta"]; !ok {
		return RestoreReport{}, fmt.Errorf("%w: %s: no %smeta at revision %d: no afloat quota ledger under that prefix", ErrSnapshot, path, p, rev)
	} else if !bytes.Equal(got, meta) {
		return RestoreReport{}, fmt.Errorf("%w: %s: %smeta is %s, this cluster's is %s", ErrForeign, path, p, got, meta)
	}
	rep := RestoreReport{Revision: rev, Wait: wait}
	// What the etcd holds now: its next ID and its tenants' leases.
	cur, err := cfg.Client.Get(ctx, p, clientv3.WithPrefix())
	if err != nil {
		return RestoreReport{}, fmt.Errorf("etcdledger: reading %s: %w", p, err)
	}
	noLeader := clientv3.Compare(clientv3.CreateRevision(p+"election/"), "=", 0).WithPrefix()
	restoreKeys := map[string][]byte{}
	for k, v := range kvs {
		if strings.HasPrefix(k, p+"election/") || k == p+"write" || k == p+"restored" {
			continue
		}
		restoreKeys[k] = v
	}
	scan := func(k string, v []byte) error {
		switch {
		case strings.HasPrefix(k, p+"election/"):
			return fmt.Errorf("%w (%s)", ErrLeading, k)
		case k == p+"nextid":
			n, err := strconv.ParseUint(string(v), 10, 64)
			if err != nil {
				return fmt.Errorf("%w: %s: %q", ErrForeign, k, v)
			}
			rep.NextID = max(rep.NextID, n)
		case strings.HasPrefix(k, p+"lease/"):
			var l quota.Lease
			if err := json.Unmarshal(v, &l); err != nil || l.ID == 0 {
				return fmt.Errorf("%w: %s: not a lease: %q", ErrForeign, k, v)
			}
			rep.NextID = max(rep.NextID, l.ID+1)
			rep.Wait = max(rep.Wait, l.Expires-l.Activates)
		case strings.HasPrefix(k, p+"tenant/"):
			var r coordinator.TenantRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("%w: %s: not a tenant: %q", ErrForeign, k, v)
			}
			if t := r.Tenant.WithDefaults(); t.LeaseDuration > 0 {
				rep.Wait = max(rep.Wait, t.LeaseDuration+t.Margin())
			}
		}
		return nil
	}
	for _, kv := range cur.Kvs {
		if err := scan(string(kv.Key), kv.Value); err != nil {
			return RestoreReport{}, err
		}
	}
	for k, v := range restoreKeys {
		if err := scan(k, v); err != nil {
			return RestoreReport{}, err
		}
		switch {
		case strings.HasPrefix(k, p+"lease/"):
			rep.Leases++
		case strings.HasPrefix(k, p+"tenant/"):
			rep.Tenants++
		case strings.HasPrefix(k, p+"holder/"):
			rep.Holders++
		}
	}
	rep.NextID = max(rep.NextID, 1)
	restoreKeys[p+"nextid"] = []byte(strconv.FormatUint(rep.NextID, 10))
	mark, _ := json.Marshal(coordinator.Restored{Wait: rep.Wait, At: at.UnixNano()})
	// First: everything replaced, the mark and the meta written.
	// (etcd refuses a put inside a range the same transaction deletes:
	// the ranges leave out the two keys it puts.)
	end := clientv3.GetPrefixRangeEnd(p)
	first := []clientv3.Op{
		clientv3.OpDelete(p, clientv3.WithRange(p+"meta")),
		clientv3.OpDelete(p+"meta\x00", clientv3.WithRange(p+"restored")),
		clientv3.OpDelete(p+"restored\x00", clientv3.WithRange(end)),
		clientv3.OpPut(p+"restored", string(mark)), clientv3.OpPut(p+"meta", string(meta)),
	}
	delete(restoreKeys, p+"meta")
	txn := func(ops []clientv3.Op) error {
		resp, err := cfg.Client.Txn(ctx).If(noLeader).Then(ops...).Commit()
		if err != nil {
			return fmt.Errorf("etcdledger: restoring: %w", err)
		}
		if !resp.Succeeded {
			return fmt.Errorf("%w: one started during the restore; stop it and restore again", ErrLeading)
		}
		return nil
	}
	if err := txn(first); err != nil {
		return RestoreReport{}, err
	}
	var batch []clientv3.Op
	for k, v := range restoreKeys {
		batch = append(batch, clientv3.OpPut(k, string(v)))
		rep.Keys++
		if len(batch) == cfg.MaxTxnOps {
			if err := txn(batch); err != nil {
				return RestoreReport{}, err
			}
			batch = nil
		}
	}
	if len(batch) > 0 {
		if err := txn(batch); err != nil {
			return RestoreReport{}, err
		}
	}
	return rep, nil
}

// readSnapshot returns the newest value of every key under prefix in the
// etcd snapshot at path, and the snapshot's newest revision. The snapshot
// is etcd's bbolt database, maybe followed by its SHA-256 (as etcd sends
// it), which is checked; the database is read from a copy without it.
func readSnapshot(path, prefix string) (map[string][]byte, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	size := st.Size()
	tmp, err := os.CreateTemp("", "afloat-restore-*.db")
	if err != nil {
		return nil, 0, fmt.Errorf("etcdledger: restoring: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	// etcd appends the SHA-256 of the database to a snapshot it sends:
	// the size is then a multiple of 512 plus 32.
	if size%512 == sha256.Size {
		h := sha256.New()
		if _, err := io.Copy(io.MultiWriter(h, tmp), io.LimitReader(f, size-sha256.Size)); err != nil {
			return nil, 0, fmt.Errorf("etcdledger: restoring: %w", err)
		}
		want := make([]byte, sha256.Size)
		if _, err := io.ReadFull(f, want); err != nil {
			return nil, 0, fmt.Errorf("%w: %w", ErrSnapshot, err)
		}
		if !bytes.Equal(h.Sum(nil), want) {
			return nil, 0, fmt.Errorf("%w: %s: its SHA-256 does not match: a damaged or truncated copy", ErrSnapshot, path)
		}
	} else if _, err := io.Copy(tmp, f); err != nil {
		return nil, 0, fmt.Errorf("etcdledger: restoring: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, 0, fmt.Errorf("etcdledger: restoring: %w", err)
	}
	db, err := bolt.Open(tmp.Name(), 0o600, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s: %w", ErrSnapshot, filepath.Base(path), err)
	}
	defer db.Close()
	kvs := map[string][]byte{}
	var rev int64
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("key"))
		if b == nil {
			return fmt.Errorf("%w: %s: no key bucket: not an etcd v3 database", ErrSnapshot, path)
		}
		// Keys are revisions (8 bytes main, '_', 8 bytes sub; a 't' after
		// them marks a deletion), in order: the last write of a key wins.
		return b.ForEach(func(k, v []byte) error {
			if len(k) < 17 {
				return fmt.Errorf("%w: %s: a revision of %d bytes", ErrSnapshot, path, len(k))
			}
			rev = max(rev, int64(binary.BigEndian.Uint64(k[:8])))
			var kv mvccpb.KeyValue
			if err := proto.Unmarshal(v, &kv); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrSnapshot, path, err)
			}
			key := string(kv.GetKey())
			if !strings.HasPrefix(key, prefix) {
				return nil
			}
			if len(k) == 18 && k[17] == 't' {
				delete(kvs, key)
				return nil
			}
			kvs[key] = bytes.Clone(kv.GetValue())
			return nil
		})
	})
	return kvs, rev, err
}
