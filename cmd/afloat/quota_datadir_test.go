//go:build embedetcd

package main

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The embedded etcd's start-up, in processes of their own (the binary
// built with -tags embedetcd, or AFLOAT_TEST_ETCD_BINARY: the way to see
// these fail on an older afloat). They exec processes, so they skip under
// -short: make test-long runs them. Each bound below is a guard against a hang,
// not a measure of speed.
const startUpBound = 20 * time.Second

// runBounded runs the binary until it exits, killing it at the bound;
// it returns the exit status (-1 if killed) and standard error, and fails
// the test if the bound was reached.
func runBounded(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startUpBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var errOut syncBuffer
	cmd.Stderr = &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("afloat %s: still running after %v (killed); stderr:\n%s", strings.Join(args, " "), startUpBound, errOut.String())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), errOut.String()
}

// coordinatorArgs are the arguments of a coordinator on the walkthrough's
// config, with its data in dir.
func coordinatorArgs(dir string) []string {
	return []string{"quota", "coordinator", "--config", "../../docs/quota-cluster.yaml", "--listen", "127.0.0.1:0", "--data-dir", dir}
}

// TestQuotaCoordinatorDamagedDataDir: a coordinator leads on its embedded
// etcd and stops; then each copy of its data directory, damaged in one
// way, ends the coordinator with exit 1 and an error naming the damage,
// within the bound. The old coordinator hung — never listening, deaf to
// SIGTERM — without its WAL or with its WAL cut, and died of SIGBUS (exit
// 2) or a nil dereference with its database cut or its WAL emptied.
func TestQuotaCoordinatorDamagedDataDir(t *testing.T) {
	if testing.Short() {
		t.Skip("execs the coordinator on damaged data directories: make test-long runs it")
	}
	bin := testBinary(t, "embedetcd")
	good := filepath.Join(t.TempDir(), "good")

	// A coordinator writes the data directory: it leads (its ledger in
	// etcd), then stops on SIGTERM.
	leadsAndStops(t, bin, good)
	member := filepath.Join("etcd", "member")
	db := filepath.Join(member, "snap", "db")
	walFile := func(dir string) string {
		names, err := filepath.Glob(filepath.Join(dir, member, "wal", "*.wal"))
		if err != nil || len(names) == 0 {
			t.Fatalf("no WAL file in %s: %v", dir, err)
		}
		return names[0]
	}
	truncate := func(path string, size int64) {
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name   string
		damage func(dir string)
		want   []string // on stderr, after "etcdmember: the data directory is damaged"
	}{
		{"wal-removed", func(dir string) {
			if err := os.RemoveAll(filepath.Join(dir, member, "wal")); err != nil {
				t.Fatal(err)
			}
		}, []string{"the WAL", "is missing, but the database has applied"}},
		{"wal-cut", func(dir string) { truncate(walFile(dir), 1000) }, []string{"the WAL", "ends at entry", "but the database has applied"}},
		{"wal-empty", func(dir string) { truncate(walFile(dir), 0) }, []string{"the WAL", "cannot be read"}},
		{"db-two-pages", func(dir string) { truncate(filepath.Join(dir, db), 8192) }, []string{"snap/db: cut short: 8192 bytes, but its meta page counts"}},
		{"db-four-pages", func(dir string) { truncate(filepath.Join(dir, db), 16384) }, []string{"snap/db: cut short: 16384 bytes"}},
		{"db-meta-pages", func(dir string) {
			f, err := os.OpenFile(filepath.Join(dir, db), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			junk := make([]byte, 100)
			for i := range junk {
				junk[i] = byte(i*7 + 1)
			}
			for _, off := range []int64{16, 4096 + 16} { // both meta pages, past their page headers
				if _, err := f.WriteAt(junk, off); err != nil {
					t.Fatal(err)
				}
			}
		}, []string{"snap/db: no valid meta page"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.CopyFS(dir, os.DirFS(good)); err != nil {
				t.Fatal(err)
			}
			tc.damage(dir)
			status, errOut := runBounded(t, bin, coordinatorArgs(dir)...)
			want := append([]string{"afloat quota coordinator: etcdmember: the data directory is damaged: " + filepath.Join(dir, "etcd")}, tc.want...)
			want = append(want, "restore the data directory from a backup")
			if status != 1 {
				t.Errorf("status %d, want 1; stderr:\n%s", status, errOut)
			}
			for _, w := range want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr does not say %q:\n%s", w, errOut)
				}
			}
			if strings.Contains(errOut, "quota coordinator: serving") {
				t.Errorf("it served on a damaged data directory:\n%s", errOut)
			}
		})
	}

	// The intact copy still starts: the checks refuse only damage.
	t.Run("intact", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		if err := os.CopyFS(dir, os.DirFS(good)); err != nil {
			t.Fatal(err)
		}
		leadsAndStops(t, bin, dir)
	})
}

// leadsAndStops runs a coordinator with its data in dir until it leads,
// then stops it with SIGTERM: exit 0.
func leadsAndStops(t *testing.T, bin, dir string) {
	t.Helper()
	cmd := exec.Command(bin, coordinatorArgs(dir)...)
	var errOut syncBuffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(startUpBound)
	for !strings.Contains(errOut.String(), `msg="quota coordinator: leading"`) {
		select {
		case err := <-exited:
			t.Fatalf("the coordinator on %s ended before it led (%v):\n%s", dir, err, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the coordinator on %s did not lead within %v:\n%s", dir, startUpBound, errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Fatalf("the coordinator on %s, stopped: %v\n%s", dir, err, errOut.String())
	}
}

// TestQuotaStartUpEndsOnSIGTERM: SIGTERM ends a process whose embedded
// etcd is still starting, with exit 0 (stopped as asked), within the
// bound — in the two places a start-up can wait without end: a member of
// a cluster waiting for a quorum its absent peer denies it (the old
// member waited forever in etcd's Close of a server that never became
// ready), and a coordinator reading a file of its data directory that
// never ends (a FIFO here: an unresponsive disk for the old coordinator,
// which read it on the goroutine that should have seen the signal).
func TestQuotaStartUpEndsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("execs the coordinator on damaged data directories: make test-long runs it")
	}
	bin := testBinary(t, "embedetcd")

	t.Run("member-waiting-for-quorum", func(t *testing.T) {
		client, peer, absent := "http://"+freeAddr(t), "http://"+freeAddr(t), "http://"+freeAddr(t)
		cmd := exec.Command(bin, "quota", "etcd", "--name", "a", "--data-dir", t.TempDir(),
			"--client-url", client, "--peer-url", peer, "--initial-cluster", "a="+peer+",b="+absent)
		var out, errOut syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		// Its client port accepts once etcd has started its listeners —
		// well past the signal handler — and it cannot become ready.
		u, _ := url.Parse(client)
		deadline := time.Now().Add(startUpBound)
		for {
			c, err := net.Dial("tcp", u.Host)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the member never listened:\n%s", errOut.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if strings.Contains(out.String(), "ready") {
			t.Errorf("a member without its quorum said %q: it is not ready", out.String())
		}
		endsOnSIGTERM(t, cmd, &errOut)
	})

	// A member alone is its own quorum: it says so on stdout, once it
	// serves, with the URL its clients dial.
	t.Run("member-alone-says-ready", func(t *testing.T) {
		cmd := exec.Command(bin, "quota", "etcd", "--name", "a", "--data-dir", t.TempDir())
		var out, errOut syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		deadline := time.Now().Add(startUpBound)
		for !strings.Contains(out.String(), "afloat quota etcd: member a ready, clients on http://127.0.0.1:") {
			if time.Now().After(deadline) {
				t.Fatalf("no ready line within %v: stdout %q\n%s", startUpBound, out.String(), errOut.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		endsOnSIGTERM(t, cmd, &errOut)
	})

	t.Run("coordinator-reading-its-data-directory", func(t *testing.T) {
		dir := t.TempDir()
		fifo := filepath.Join(dir, "afloat-etcd.json") // the ports the member keeps
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, coordinatorArgs(dir)...)
		var errOut syncBuffer
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		// Opening the FIFO for writing returns once the coordinator has
		// opened it to read: from then on its read waits for a writer
		// that writes nothing.
		opened := make(chan *os.File, 1)
		go func() {
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
			}
			opened <- f
		}()
		select {
		case f := <-opened:
			if f != nil {
				defer f.Close()
			}
		case <-time.After(startUpBound):
			t.Fatalf("the coordinator never read its data directory:\n%s", errOut.String())
		}
		endsOnSIGTERM(t, cmd, &errOut)
	})
}

// endsOnSIGTERM sends SIGTERM and waits, within the bound, for exit 0.
func endsOnSIGTERM(t *testing.T, cmd *exec.Cmd, errOut *syncBuffer) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after SIGTERM: %v (want exit 0: stopped as asked)\n%s", err, errOut.String())
		}
	case <-time.After(startUpBound):
		cmd.Process.Kill()
		<-done
		t.Fatalf("still running %v after SIGTERM (killed):\n%s", startUpBound, errOut.String())
	}
}
