package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/afloat/afloat/internal/strictjson"
	"github.com/afloat/afloat/quota/region"
	"github.com/afloat/afloat/quota/remote"
)

// A handover file passes a region's leases from an agent that stops to
// the one that replaces it (Options.HandoverFile; region.Handover says why
// the bound holds). Two rules keep it safe:
//
//   - it is written only after the agent stopped spending: Run takes every
//     lease out of use before it returns, and the decision API and the
//     fronts are shut down before that;
//   - it is read once: the next agent renames it away before reading it,
//     so that of two agents started on one file only one resumes; the
//     other attaches as a new agent and waits, as without a handover.
//
// It holds the incarnation, which stands for the region at the
// coordinator: mode 0600, and never in a log line.

// handoverVersion is the file's format.
const handoverVersion = 1

// maxHandover bounds the file: 100,000 tenants take about 7 MB.
const maxHandover = 64 << 20

// handoverFile is the file's content.
type handoverFile struct {
	Version     int    `json:"version"`
	Region      string `json:"region"`
	Incarnation uint64 `json:"incarnation"`
	// Written is when the file was written (Unix ns), from which each
	// lease's Left is counted.
	Written int64                `json:"written_unix_ns"`
	Leases  []region.HandedLease `json:"leases"`
}

// checkHandoverFile checks Options.HandoverFile: empty, or a path in a
// folder that exists.
func checkHandoverFile(path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return fmt.Errorf("--handover-file %s: its folder %s does not exist", path, filepath.Dir(path))
	}
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("--handover-file %s: not a regular file", path)
	}
	return nil
}

// takeHandover takes the handover file at path, if there is one, and
// reads it: nil, nil when there is none. The file is gone afterwards,
// whatever it held.
func takeHandover(path, regionName string) (*handoverFile, error) {
	taken := path + ".taken"
	if err := os.Rename(path, taken); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("--handover-file %s: %w", path, err)
	}
	defer os.Remove(taken) //nolint:errcheck // best effort: it was taken
	f, err := os.Open(taken)
	if err != nil {
		return nil, fmt.Errorf("--handover-file %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxHandover+1))
	if err != nil {
		return nil, fmt.Errorf("--handover-file %s: %w", path, err)
	}
	if len(data) > maxHandover {
		return nil, fmt.Errorf("--handover-file %s: over %d bytes", path, maxHandover)
	}
	var h handoverFile
	if err := strictjson.Decode(data, &h); err != nil {
		return nil, fmt.Errorf("--handover-file %s: %w", path, err)
	}
	switch {
	case h.Version != handoverVersion:
		return nil, fmt.Errorf("--handover-file %s: version %d: want %d", path, h.Version, handoverVersion)
	case h.Region != regionName:
		return nil, fmt.Errorf("--handover-file %s: region %q: want %q, this agent's", path, h.Region, regionName)
	case h.Incarnation == 0 || h.Incarnation >= 1<<53:
		return nil, fmt.Errorf("--handover-file %s: incarnation: want 1 to 2^53-1", path)
	}
	// What is left of each lease, counted from now: only an order to
	// renew them in, so a clock that moved costs nothing but that order.
	since := time.Duration(time.Now().UnixNano() - h.Written)
	for i, l := range h.Leases {
		if l.Tenant == "" || l.Lease == 0 {
			return nil, fmt.Errorf("--handover-file %s: leases[%d]: want a tenant and a lease other than 0", path, i)
		}
		h.Leases[i].Left = l.Left - since
	}
	return &h, nil
}

// writeHandover writes h to path, whole or not at all: a file beside it,
// synced, then renamed over path.
func writeHandover(path string, h handoverFile) error {
	data, err := json.Marshal(h)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone once renamed
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync() //nolint:errcheck // the rename is done; a crash may undo it, and the next agent then waits
		d.Close()
	}
	return nil
}

// resume takes the handover file the region's previous agent left, if
// Options.HandoverFile names one: its leases become the limiter's
// starting point (region.Limiter.Resume), and its incarnation the one to
// renew as. 0 when there is none to resume — then the agent attaches as
// a new one. A file that cannot be used is said in the log, and gone.
func (a *Agent) resume() uint64 {
	o := a.o
	if o.HandoverFile == "" {
		return 0
	}
	h, err := takeHandover(o.HandoverFile, o.Name)
	if err != nil {
		o.Logger.Warn("quota region: the handover file cannot be used; attaching as a new agent, which waits until the previous agent's leases end",
			"region", o.Name, "err", err)
		return 0
	}
	if h == nil {
		return 0
	}
	n, err := a.lim.Resume(region.Handover{Region: h.Region, Leases: h.Leases})
	if err != nil {
		o.Logger.Warn("quota region: the handover cannot be resumed; attaching as a new agent", "region", o.Name, "err", err)
		return 0
	}
	o.Logger.Info("quota region: resuming the leases the previous agent handed over", "region", o.Name,
		"file", o.HandoverFile, "leases", n, "of", len(h.Leases))
	return h.Incarnation
}

// handOver writes the handover file once the agent has stopped spending
// (Run returned WithHandover): the region's hold and its leases, for the
// next agent. False if there is nothing to hand over — the region is not
// held (never attached, or superseded) — or the file could not be
// written: then the agent detaches, as without a handover.
func (a *Agent) handOver(client *remote.Client, h region.Handover) bool {
	o := a.o
	inc := client.Incarnation()
	if inc == 0 {
		return false
	}
	err := writeHandover(o.HandoverFile, handoverFile{Version: handoverVersion, Region: o.Name, Incarnation: inc,
		Written: time.Now().UnixNano(), Leases: h.Leases})
	if err != nil {
		o.Logger.Warn("quota region: the handover file could not be written; detaching instead", "region", o.Name,
			"file", o.HandoverFile, "err", err)
		return false
	}
	o.Logger.Info("quota region: handed the region's leases over to the next agent; it resumes them from the file",
		"region", o.Name, "file", o.HandoverFile, "leases", len(h.Leases))
	return true
}
