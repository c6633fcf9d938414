package eventlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

// TestTenantEvents: a change reaches the event log as a tenant event with
// who made it, and a cut credit as a negative credit, readable back.
func TestTenantEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	l, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	acme := quota.Tenant{Name: "acme", Rate: 60 * quota.One, Burst: 120 * quota.One, Regions: []string{"eu", "us"},
		Mode: quota.BestEffort, Emergency: 5 * quota.One}
	for _, e := range TenantChangeEvents(1000, "update", "alice", quota.Tenant{}, acme, 30*quota.One) {
		l.Write(&e)
	}
	for _, e := range TenantChangeEvents(2000, "delete", "bob", acme, quota.Tenant{}, 0) {
		l.Write(&e)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got collected
	if err := ReadLog(f, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d events: %+v", len(got), got)
	}
	u, c, d := got[0], got[1], got[2]
	if u.Kind != Tenant || u.Why != "update" || u.By != "alice" || u.Rate != acme.Rate || u.Burst != acme.Burst ||
		u.N != 2 || u.Mode != "best-effort" || u.Balance != acme.Emergency {
		t.Fatalf("update: %+v", u)
	}
	if c.Kind != Credit || c.Balance != -30*quota.One || c.Tenant != "acme" {
		t.Fatalf("cut credit: %+v", c)
	}
	if d.Kind != Tenant || d.Why != "delete" || d.By != "bob" || d.Rate != acme.Rate {
		t.Fatalf("delete: %+v", d)
	}
}

// TestFileAppendsWholeLines: a process that restarts continues its log,
// and what a File holds is whole lines, each log ended by its stop; a nil
// File logs nothing.
func TestFileAppendsWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	tenants := []quota.Tenant{{Name: "acme", Rate: 5 * quota.One, Burst: 6 * quota.One, Regions: []string{"eu"}}}
	for run := range 2 {
		l, err := OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range StartEvents(int64(run*10), tenants) {
			l.Write(&e)
		}
		l.Write(&Event{T: int64(run*10 + 1), Kind: Admit, Tenant: "acme", Region: "eu", N: 2})
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got collected
	if err := ReadLog(strings.NewReader(string(b)), &got); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range got {
		kinds = append(kinds, e.Kind.String())
	}
	if want := "start admit stop start admit stop"; strings.Join(kinds, " ") != want {
		t.Fatalf("the log holds %q, want %q", kinds, want)
	}
	if s := got[0]; s.Tenant != "acme" || s.Rate != 5*quota.One || s.Burst != 6*quota.One || s.N != 1 || s.Why != "hard" {
		t.Fatalf("start: %+v", s)
	}
	var none *File
	none.Write(&Event{Kind: Admit})
	if err := none.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := none.Close(); err != nil {
		t.Fatal(err)
	}
}

type collected []Event

func (c *collected) Write(e *Event) { *c = append(*c, *e) }

// TestWriteLine: a summary line has "ev" first and the value's fields
// after, and reads back as a Summary; what is not an object is refused.
func TestWriteLine(t *testing.T) {
	type sum struct {
		Seed       uint32 `json:"seed"`
		Violations int    `json:"violations"`
	}
	for i, tc := range []struct {
		ev   string
		v    any
		want string // the line, or the error
	}{
		{"summary", sum{Seed: 7}, `{"ev":"summary","seed":7,"violations":0}` + "\n"},
		{"check", struct{}{}, `{"ev":"check"}` + "\n"},
		{"check", map[string]int{"violations": 2}, `{"ev":"check","violations":2}` + "\n"},
		{"summary", []int{1}, "eventlog: the summary line: [1], not an object"},
		{"summary", func() {}, "eventlog: the summary line: json: unsupported type"},
	} {
		var b strings.Builder
		err := WriteLine(&b, tc.ev, tc.v)
		if got := b.String(); err == nil && got != tc.want || err != nil && (!strings.HasPrefix(err.Error(), tc.want) || got != "") {
			t.Errorf("step %d: WriteLine(%s, %v): %q, %v; want %q", i, tc.ev, tc.v, got, err, tc.want)
		}
	}
	var b strings.Builder
	if err := WriteLine(&b, "summary", sum{Seed: 7}); err != nil {
		t.Fatal(err)
	}
	if e, err := ParseEvent([]byte(strings.TrimSuffix(b.String(), "\n"))); err != nil || e.Kind != Summary {
		t.Errorf("the summary line reads back as %v, %v; want a Summary", e.Kind, err)
	}
}

// fullDisk writes to a real file until room runs out: then it writes
// what fits (part of the batch) and fails, as a write(2) on a full disk
// does. room < 0: no limit.
type fullDisk struct {
	*os.File
	room int
}

func (d *fullDisk) Write(b []byte) (int, error) {
	if d.room < 0 || len(b) <= d.room {
		if d.room >= 0 {
			d.room -= len(b)
		}
		return d.File.Write(b)
	}
	n, _ := d.File.Write(b[:d.room])
	d.room = 0
	return n, errors.New("no space left on device")
}

// TestFileWriteFailures: the disk fills up halfway through a batch.
// Append reports the error and the file keeps no part of the batch; a
// Flush that fails keeps its lines for the next; nothing stops for good:
// once there is room, the lines buffered and a batch appended again
// reach the file whole, each once. Failures counts the failed writes.
func TestFileWriteFailures(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	l, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	disk := &fullDisk{File: l.f.(*os.File), room: -1}
	l.mu.Lock()
	l.f = disk
	l.mu.Unlock()
	grant := &Event{T: 1, Kind: Lease, Tenant: "acme", Region: "eu", ID: 7, Epoch: 1, Rate: quota.One, Burst: quota.One}
	credit := &Event{T: 1, Kind: Credit, Tenant: "acme", Region: "us", ID: 3, Balance: quota.One}
	if err := l.Append(grant, credit); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	disk.room = 10 // the next batch is cut after 10 bytes
	l.mu.Unlock()
	grant2 := &Event{T: 2, Kind: Lease, Tenant: "acme", Region: "eu", ID: 8, Epoch: 1, Rate: quota.One, Burst: quota.One}
	if err := l.Append(grant2); err == nil {
		t.Fatal("step 1: Append on a full disk reported no error")
	}
	l.Write(&Event{T: 3, Kind: Admit, Tenant: "acme", Region: "eu", N: 1})
	if err := l.Flush(); err == nil {
		t.Fatal("step 2: Flush on a full disk reported no error")
	}
	if n := l.Failures(); n != 2 {
		t.Fatalf("step 3: Failures = %d, want 2", n)
	}
	l.mu.Lock()
	disk.room = -1 // room again
	l.mu.Unlock()
	if err := l.Append(grant2); err != nil {
		t.Fatalf("step 4: Append once there is room: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got collected
	if err := ReadLog(strings.NewReader(string(b)), &got); err != nil {
		t.Fatalf("step 5: the log does not read back (a line cut in half?): %v\n%s", err, b)
	}
	var kinds []string
	for _, e := range got {
		kinds = append(kinds, fmt.Sprintf("%s %d", e.Kind, e.ID))
	}
	if want := "lease 7, credit 3, admit 0, lease 8, stop 0"; strings.Join(kinds, ", ") != want {
		t.Fatalf("step 5: the log holds %q, want %q", strings.Join(kinds, ", "), want)
	}
}

// TestFileRotates: a File with Rotated starts a new file past the size,
// numbering the old ones PATH.1, PATH.2, … across restarts, and OpenLog
// reads them end to end as the one log they are, every event once and in
// order; once the oldest parts are deleted (keep), OpenLog refuses the
// rest as a log whose beginning is gone. With Counted, the decisions are
// counts, in place of their lines.
func TestFileRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "region.jsonl")
	tenants := []quota.Tenant{{Name: "acme", Rate: 5 * quota.One, Burst: 6 * quota.One, Regions: []string{"eu"}}}
	written := 0
	for run := range 2 {
		l, err := OpenFile(path, Rotated(MinRotateBytes, 100), Counted(MinCountInterval))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range StartEvents(int64(run)*1e9, tenants) {
			l.Write(&e)
		}
		for i := range 300 {
			at := int64(run)*1e9 + int64(i+1)*int64(time.Millisecond)
			l.Write(&Event{T: at, Kind: Install, Tenant: "acme", Region: "eu", ID: uint64(run*1000 + i + 1)})
			l.Write(&Event{T: at, Kind: Admit, Tenant: "acme", Region: "eu", N: 2})
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			written++
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	parts, err := logParts(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) < 5 || parts[0].n != 1 || parts[len(parts)-1].n != len(parts) {
		t.Fatalf("parts %v: want 1 to N, several", parts)
	}
	r, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	var got collected
	err = ReadLog(r, &got)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	var installs, admitted int64
	lastID := uint64(0)
	for _, e := range got {
		switch e.Kind {
		case Install:
			if e.ID <= lastID {
				t.Fatalf("install %d after %d: out of order", e.ID, lastID)
			}
			installs, lastID = installs+1, e.ID
		case Counts:
			admitted += e.N
		case Admit:
			t.Fatalf("an admit line in a counted log: %+v", e)
		}
	}
	if installs != int64(written) || admitted != 2*int64(written) {
		t.Fatalf("read %d installs and %d tokens admitted; wrote %d and %d", installs, admitted, written, 2*written)
	}

	// Keep 2: the oldest parts go, and with them the log's beginning.
	l, err := OpenFile(path, Rotated(MinRotateBytes, 2))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		l.Write(&Event{T: 3e9 + int64(i), Kind: Install, Tenant: "acme", Region: "eu", ID: uint64(5000 + i)})
		l.Flush() //nolint:errcheck // Close reports it
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if parts, _ := logParts(path); len(parts) != 2 {
		t.Fatalf("kept %v, want 2 parts", parts)
	}
	if _, err := OpenLog(path); !errors.Is(err, ErrPartsMissing) || !errors.Is(err, ErrUnproven) || !strings.Contains(err.Error(), "the oldest part kept") {
		t.Fatalf("OpenLog without the first parts: %v; want %v", err, ErrPartsMissing)
	}
	for _, tc := range []struct {
		opts []FileOption
		want error
	}{
		{[]FileOption{Rotated(MinRotateBytes-1, 3)}, ErrRotation},
		{[]FileOption{Rotated(MinRotateBytes, 0)}, ErrRotation},
		{[]FileOption{Rotated(MinRotateBytes, MaxRotateKeep+1)}, ErrRotation},
		{[]FileOption{Counted(time.Millisecond)}, ErrCountInterval},
	} {
		if _, err := OpenFile(filepath.Join(dir, "refused.jsonl"), tc.opts...); !errors.Is(err, tc.want) {
			t.Errorf("%v: %v, want %v", tc.opts, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "refused.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused OpenFile created its file: %v", err)
	}
}
