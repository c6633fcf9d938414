package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/region"
)

// TestHandoverFile: what an agent writes, the next one reads once — the
// file is gone after it, so a third agent on the same path attaches
// afresh — and a file of another region, another version, without an
// incarnation or with a lease 0 is refused naming the field (and gone
// too). The file is 0600: it holds the region's hold.
func TestHandoverFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "eu.handover")
	h := handoverFile{Version: handoverVersion, Region: "eu", Incarnation: 42, Written: time.Now().Add(-time.Second).UnixNano(),
		Leases: []region.HandedLease{{Tenant: "a", Lease: 7, Epoch: 2, Left: 5 * time.Second}, {Tenant: "b", Lease: 9, Epoch: 2, Left: 10 * time.Second}}}
	if err := writeHandover(path, h); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %04o, want 0600", st.Mode().Perm())
	}
	got, err := takeHandover(path, "eu")
	if err != nil || got == nil || got.Incarnation != 42 || len(got.Leases) != 2 || got.Leases[1].Lease != 9 || got.Leases[1].Tenant != "b" {
		t.Fatalf("takeHandover: %+v, %v; want what was written", got, err)
	}
	// What is left of each lease counts from the file's writing: a
	// second ago.
	if left := got.Leases[0].Left; left > 4*time.Second || left < 3*time.Second {
		t.Errorf("lease 7 has %v left; want 4 s less the time since", left)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the file is still there after it was taken: %v", err)
	}
	if again, err := takeHandover(path, "eu"); again != nil || err != nil {
		t.Errorf("a second take: %+v, %v; want none", again, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("left in the folder: %v", entries)
	}

	for _, c := range []struct {
		name, body, region, want string
	}{
		{"another region", `{"version":1,"region":"us","incarnation":42,"leases":[]}`, "eu", `region "us": want "eu"`},
		{"another version", `{"version":2,"region":"eu","incarnation":42,"leases":[]}`, "eu", "version 2: want 1"},
		{"no incarnation", `{"version":1,"region":"eu","incarnation":0,"leases":[]}`, "eu", "incarnation: want 1 to 2^53-1"},
		{"a lease 0", `{"version":1,"region":"eu","incarnation":42,"leases":[{"tenant":"a","lease":0,"epoch":1}]}`, "eu", "leases[0]"},
		{"an unknown field", `{"version":1,"region":"eu","incarnation":42,"leases":[],"token":"x"}`, "eu", "token"},
		{"not JSON", `version: 1`, "eu", "--handover-file"},
	} {
		if err := os.WriteFile(path, []byte(c.body), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := takeHandover(path, c.region)
		if got != nil || err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--handover-file") {
			t.Errorf("%s: %+v, %v; want an error naming --handover-file and %q", c.name, got, err, c.want)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: the refused file is still there", c.name)
		}
	}
	if err := checkHandoverFile(filepath.Join(dir, "missing", "eu.handover")); err == nil || !strings.Contains(err.Error(), "--handover-file") {
		t.Errorf("a folder that does not exist: %v, want an error naming --handover-file", err)
	}
	if err := checkHandoverFile(dir); err == nil {
		t.Error("a folder as the file: accepted")
	}
}
