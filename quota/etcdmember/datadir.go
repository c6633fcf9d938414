//go:build embedetcd

package etcdmember

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.uber.org/zap"
)

// checkDataDir looks at an embedded member's data (dir is etcd's own
// directory, DATA-DIR/etcd) before etcd opens it, and says what is
// damaged, because etcd does not: with its WAL gone it starts a new
// member over the old database and waits forever for entries the
// database has already applied (silently, since its own log is quiet);
// with its WAL cut short, likewise; with its database cut short, bbolt
// maps pages past the end of the file and the first read of one kills the
// process with SIGBUS. What is checked, all read-only:
//
//   - the database (member/snap/db), if there is one: its meta pages (a
//     valid one, as bbolt chooses it), a file long enough for every page
//     its meta page counts, and the index of the last entry it applied
//     (read through bbolt, read-only, once the length is known to be
//     whole);
//   - the WAL (member/wal): present when the database has applied
//     entries, readable record by record (CRCs, snapshot records), and
//     holding every entry the database has applied.
//
// A new member (no member directory) and a member whose database is
// missing or empty (etcd rebuilds it from the WAL) pass. Damage inside a
// page that the meta pages and the WAL do not show is etcd's to find.
func checkDataDir(dir string) error {
	member := filepath.Join(dir, "member")
	if _, err := os.Stat(member); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	walDir, db := filepath.Join(member, "wal"), filepath.Join(member, "snap", "db")
	damaged := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: "+format+"; restore the data directory from a backup, or move %s aside to start over with an empty ledger",
			append(append([]any{ErrDataDirDamaged, dir}, args...), dir)...)
	}
	applied, err := dbApplied(db)
	if errors.Is(err, ErrDataDirInUse) {
		return err
	}
	if err != nil {
		return damaged("the database %s: %v", db, err)
	}
	if !wal.Exist(walDir) {
		if applied > 0 {
			return damaged("the WAL (%s) is missing, but the database has applied %d entries: etcd would start a new member over it and never become ready", walDir, applied)
		}
		return nil
	}
	last, err := walLastIndex(walDir)
	if err != nil {
		return damaged("the WAL (%s) cannot be read: %v", walDir, err)
	}
	if applied > last {
		return damaged("the WAL (%s) ends at entry %d, but the database has applied %d: entries are missing from the WAL (cut short, or an older copy)", walDir, last, applied)
	}
	return nil
}

// dbApplied is the index of the last entry the database at path has
// applied (etcd's consistent index), or 0 if there is no database.
func dbApplied(path string) (uint64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err != nil {
		f.Close()
		return 0, err
	}
	if st.Size() == 0 {
		f.Close()
		return 0, nil // bbolt writes a new database; etcd replays the WAL into it
	}
	err = checkBoltLength(f, st.Size())
	f.Close()
	if err != nil {
		return 0, err
	}
	return boltConsistentIndex(path)
}

// bbolt's meta page: a 16-byte page header, then magic, version, page
// size, flags (4 bytes each), the root bucket (16), the freelist's page,
// the high-water mark (pages in use), the transaction id, and an FNV-1a
// checksum of everything before it — in the machine's byte order, as
// bbolt writes it (go.etcd.io/bbolt/internal/common, Meta).
const (
	boltPageHeader = 16
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	boltMetaSum    = 56 // bytes of the meta the checksum covers
)

type boltMeta struct {
	pageSize uint32
	pgid     uint64 // high-water mark: pages 0 to pgid−1 are in use
	txid     uint64
}

// readBoltMeta reads the meta page at off; ok is false when it is not a
// valid one.
func readBoltMeta(f *os.File, off int64) (m boltMeta, ok bool) {
	var b [boltPageHeader + boltMetaSum + 8]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		return boltMeta{}, false
	}
	meta := b[boltPageHeader:]
	order := binary.NativeEndian
	h := fnv.New64a()
	h.Write(meta[:boltMetaSum])
	if order.Uint32(meta[0:]) != boltMagic || order.Uint32(meta[4:]) != boltVersion || order.Uint64(meta[boltMetaSum:]) != h.Sum64() {
		return boltMeta{}, false
	}
	m = boltMeta{pageSize: order.Uint32(meta[8:]), pgid: order.Uint64(meta[40:]), txid: order.Uint64(meta[48:])}
	return m, m.pageSize >= 512 && m.pageSize&(m.pageSize-1) == 0
}

// checkBoltLength finds the meta page bbolt would use — the valid one of
// the two with the higher transaction id, the page size from the first,
// or from the second where bbolt looks for it — and checks that the file
// holds every page it counts: bbolt maps the file without checking, and
// a page past its end is a SIGBUS at the first read.
func checkBoltLength(f *os.File, size int64) error {
	var pageSize int64
	if m, ok := readBoltMeta(f, 0); ok {
		pageSize = int64(m.pageSize)
	} else {
		for i := range 15 {
			pos := int64(1024) << i
			if pos >= size-1024 {
				break
			}
			if m, ok := readBoltMeta(f, pos); ok {
				pageSize = int64(m.pageSize)
				break
			}
		}
	}
	if pageSize == 0 {
		return fmt.Errorf("no valid meta page in its %d bytes (not a bbolt database, or both meta pages damaged)", size)
	}
	m0, ok0 := readBoltMeta(f, 0)
	m1, ok1 := readBoltMeta(f, pageSize)
	m := m0
	switch {
	case ok0 && ok1 && m1.txid > m0.txid, !ok0 && ok1:
		m = m1
	case !ok0 && !ok1:
		return fmt.Errorf("no valid meta page at %d or %d bytes", 0, pageSize)
	}
	if uint64(size)/uint64(pageSize) < max(m.pgid, 2) {
		return fmt.Errorf("cut short: %d bytes, but its meta page counts %d pages of %d bytes (%d bytes)", size, m.pgid, pageSize, m.pgid*uint64(pageSize))
	}
	return nil
}

// boltConsistentIndex reads etcd's consistent index (bucket meta, key
// consistent_index, 8 bytes big-endian) from a database whose length
// checkBoltLength has checked; a fault reading the map is an error here,
// not a crash (debug.SetPanicOnFault), should the file shrink meanwhile.
func boltConsistentIndex(path string) (ci uint64, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			ci, err = 0, fmt.Errorf("unreadable: %v", r)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return 0, fmt.Errorf("%w: %s is locked by another process (an etcd, or a tool such as etcdutl or bbolt)", ErrDataDirInUse, path)
	}
	if err != nil {
		return 0, err
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("meta"))
		if b == nil {
			return nil
		}
		v := b.Get([]byte("consistent_index"))
		if v == nil {
			return nil
		}
		if len(v) != 8 {
			return fmt.Errorf("its consistent index is %d bytes, not 8", len(v))
		}
		ci = binary.BigEndian.Uint64(v)
		return nil
	})
	return ci, err
}

// walLastIndex reads the WAL from its last snapshot record, as etcd does
// when it starts, and returns the index of its last entry. A record cut
// at the end (a torn write, which etcd repairs) ends the entries; any
// other damage is an error, as are the panics etcd's decoders raise on a
// record that does not unmarshal.
func walLastIndex(walDir string) (last uint64, err error) {
	defer func() {
		if r := recover(); r != nil {
			last, err = 0, fmt.Errorf("a record does not decode: %v", r)
		}
	}()
	lg := zap.NewNop()
	snaps, err := wal.ValidSnapshotEntries(lg, walDir)
	if err != nil {
		return 0, err
	}
	start := &walpb.Snapshot{Index: new(uint64(0)), Term: new(uint64(0))}
	if len(snaps) > 0 {
		s := snaps[len(snaps)-1]
		start = &walpb.Snapshot{Index: new(s.GetIndex()), Term: new(s.GetTerm())}
	}
	w, err := wal.OpenForRead(lg, walDir, start)
	if err != nil {
		return 0, err
	}
	defer w.Close()
	_, _, ents, err := w.ReadAll()
	if err != nil {
		return 0, err
	}
	last = start.GetIndex()
	if len(ents) > 0 {
		last = ents[len(ents)-1].GetIndex()
	}
	return last, nil
}
