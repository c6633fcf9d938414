package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// builds holds the binaries this test process built, by build tags, so
// that each is built once however many tests exec it.
var builds = struct {
	sync.Mutex
	dir  string
	bins map[string]string
}{bins: map[string]string{}}

// testBinary returns afloat built with tags ("" or "embedetcd"): the one
// the environment names (make test-long builds both once and sets
// AFLOAT_TEST_BINARY and AFLOAT_TEST_ETCD_BINARY; they also run the tests
// against an older build), else one built now, once per test process.
func testBinary(t *testing.T, tags string) string {
	t.Helper()
	env := "AFLOAT_TEST_BINARY"
	if tags != "" {
		env = "AFLOAT_TEST_ETCD_BINARY"
	}
	if bin := os.Getenv(env); bin != "" {
		return bin
	}
	builds.Lock()
	defer builds.Unlock()
	if bin, ok := builds.bins[tags]; ok {
		return bin
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "afloat-test-bin-")
		if err != nil {
			t.Fatal(err)
		}
		builds.dir = dir
	}
	bin := filepath.Join(builds.dir, "afloat"+strings.ReplaceAll(tags, ",", "-"))
	// -buildvcs=auto, whatever GOFLAGS says: the binary names its commit
	// (afloat --version), as one built for release does.
	args := []string{"build", "-buildvcs=auto", "-o", bin}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	builds.bins[tags] = bin
	return bin
}

// evidenceDir returns a working folder for a test's processes that is
// removed when the test passes; when it fails, the files matching keep
// (event logs, the processes' output) are copied to a folder that
// outlives the test, and the failure names it.
func evidenceDir(t *testing.T, name string, keep ...string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "afloat-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer os.RemoveAll(dir)
		if !t.Failed() {
			return
		}
		kept := filepath.Join(os.TempDir(), fmt.Sprintf("afloat-%s-failed-%s", name, time.Now().UTC().Format("20060102T150405")))
		if err := os.MkdirAll(kept, 0o755); err != nil {
			t.Errorf("keeping the evidence: %v", err)
			return
		}
		for _, pattern := range keep {
			files, _ := filepath.Glob(filepath.Join(dir, pattern))
			for _, f := range files {
				if err := copyFile(f, filepath.Join(kept, filepath.Base(f))); err != nil {
					t.Errorf("keeping %s: %v", f, err)
				}
			}
		}
		t.Errorf("the event logs and the processes' output are kept in %s", kept)
	})
	return dir
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
