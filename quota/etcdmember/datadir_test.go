//go:build embedetcd

package etcdmember

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/internal/opstest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestCheckDataDir: a member's data directory, intact and damaged in each
// way checkDataDir looks for, and in the ways etcd recovers from on its
// own (no database, an empty one, one damaged meta page), which pass.
func TestCheckDataDir(t *testing.T) {
	good := t.TempDir()
	m, err := StartMember(context.Background(), MemberConfig{Name: "m", DataDir: good})
	if err != nil {
		t.Fatal(err)
	}
	// Some history, as a ledger writes it.
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := cli.Put(context.Background(), fmt.Sprint("/k/", i), strings.Repeat("v", 100)); err != nil {
			t.Fatal(err)
		}
	}
	cli.Close()
	m.Close()
	member := filepath.Join("etcd", "member")
	db := filepath.Join(member, "snap", "db")
	wals, err := filepath.Glob(filepath.Join(good, member, "wal", "*.wal"))
	if err != nil || len(wals) == 0 {
		t.Fatalf("no WAL in %s: %v", good, err)
	}
	wal := strings.TrimPrefix(wals[0], good+string(filepath.Separator))
	scribble := func(path string, offs ...int64) {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, off := range offs {
			if _, err := f.WriteAt([]byte(strings.Repeat("\x5a", 64)), off); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, tc := range []struct {
		name   string
		damage func(dir string)
		want   error
		msg    string
	}{
		{"intact", func(string) {}, nil, ""},
		{"new member", func(dir string) { os.RemoveAll(filepath.Join(dir, "etcd")) }, nil, ""},
		{"no database", func(dir string) { os.Remove(filepath.Join(dir, db)) }, nil, ""},
		{"empty database", func(dir string) { os.Truncate(filepath.Join(dir, db), 0) }, nil, ""},
		{"first meta page", func(dir string) { scribble(filepath.Join(dir, db), 16) }, nil, ""},
		{"both meta pages", func(dir string) { scribble(filepath.Join(dir, db), 16, 4096+16) }, ErrDataDirDamaged, "no valid meta page"},
		{"database cut", func(dir string) { os.Truncate(filepath.Join(dir, db), 8192) }, ErrDataDirDamaged, "cut short: 8192 bytes, but its meta page counts"},
		{"database cut mid-page", func(dir string) { os.Truncate(filepath.Join(dir, db), 5000) }, ErrDataDirDamaged, "cut short: 5000 bytes"},
		{"no WAL", func(dir string) { os.RemoveAll(filepath.Join(dir, member, "wal")) }, ErrDataDirDamaged, "is missing, but the database has applied"},
		{"WAL cut", func(dir string) { os.Truncate(filepath.Join(dir, wal), 2000) }, ErrDataDirDamaged, "ends at entry"},
		{"WAL empty", func(dir string) { os.Truncate(filepath.Join(dir, wal), 0) }, ErrDataDirDamaged, "cannot be read"},
		{"WAL scribbled", func(dir string) { scribble(filepath.Join(dir, wal), 2000) }, ErrDataDirDamaged, "the WAL"},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		if err := os.CopyFS(dir, os.DirFS(good)); err != nil {
			t.Fatal(err)
		}
		tc.damage(dir)
		err := checkDataDir(filepath.Join(dir, "etcd"))
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("step %d (%s): checkDataDir = %v, want nil", i, tc.name, err)
		case tc.want != nil && (!errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg)):
			t.Errorf("step %d (%s): checkDataDir = %v, want %v saying %q", i, tc.name, err, tc.want, tc.msg)
		}
		if tc.want != nil {
			continue
		}
		// What passes, etcd starts on.
		m, err := StartMember(context.Background(), MemberConfig{Name: "m", DataDir: dir})
		if err != nil {
			t.Errorf("step %d (%s): StartMember = %v", i, tc.name, err)
			continue
		}
		m.Close()
	}

	// A database another process holds (an etcd, etcdutl, bbolt) is in
	// use, not damaged.
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.CopyFS(dir, os.DirFS(good)); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, db))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if err := checkDataDir(filepath.Join(dir, "etcd")); !errors.Is(err, ErrDataDirInUse) || !strings.Contains(err.Error(), "is locked by another process") {
		t.Errorf("a locked database: checkDataDir = %v, want %v", err, ErrDataDirInUse)
	}
}

// TestStartMemberEndsWithItsContext: a member of a cluster whose other
// member is absent never becomes ready; when its context ends, StartMember
// returns, and the member is closed (its data directory free again). The
// old StartMember waited forever in etcd's Close of a server that was
// never ready.
func TestStartMemberEndsWithItsContext(t *testing.T) {
	dir := t.TempDir()
	client, peer, absent := "http://"+opstest.FreeAddr(t), "http://"+opstest.FreeAddr(t), "http://"+opstest.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		m, err := StartMember(ctx, MemberConfig{Name: "a", DataDir: dir, ClientURL: client, PeerURL: peer, InitialCluster: "a=" + peer + ",b=" + absent})
		if m != nil {
			m.Close()
		}
		done <- err
	}()
	// Its client port accepts once etcd has started: then it waits for b.
	u, _ := url.Parse(client)
	for {
		c, err := net.Dial("tcp", u.Host)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-done:
			t.Fatalf("StartMember returned before its context ended: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("StartMember = %v, want %v", err, context.Canceled)
		}
	case <-time.After(20 * time.Second): // a hang guard, not a measure
		t.Fatal("StartMember still waiting 20 s after its context ended")
	}
	// Closed: the data directory is free again.
	lock, err := lockDir(dir)
	if err != nil {
		t.Fatalf("after StartMember returned: %v", err)
	}
	lock.Close()
}
