package eventlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// File is the event log of a real process (afloat quota coordinator and
// region --event-log): T and the lease intervals in Unix nanoseconds, so
// that afloat quota check can check a cluster's logs merged. It appends:
// a process that restarts continues its file. Lines reach the file only
// whole, in one write each batch, so that a process killed mid-run
// leaves no line cut in half; Flush writes at once, and File flushes
// every 100 ms on its own. Append writes a batch of lines at once or not
// at all: a coordinator appends a transaction's lines before it answers,
// so that no grant a region installs is missing from the log, and a grant
// whose lines failed is not answered. A failed write is not the end: its
// bytes are cut off the file again (no half line stays), what Write
// buffered is kept for the next Flush, and each failure is counted
// (Failures) and reported to the caller of Flush or Append it failed. A
// nil *File logs nothing. It is safe for concurrent use.
//
// With Counted, a File writes decisions as counts (Counter); with
// Rotated, it starts a new file when the current one has grown past a
// size, keeping a number of the older ones (OpenLog reads them back in
// order).
//
// File is the one part of the package that reads the wall clock: its
// flush ticker, the end of the counts' intervals it writes, and the time
// of the stop event Close writes.
type File struct {
	mu       sync.Mutex
	f        sink
	size     int64 // the file's length as written whole
	buf      []byte
	batch    []byte // Append's lines, encoded
	failures atomic.Int64
	stop     chan struct{}
	done     chan struct{}
	counter  *Counter // nil: a line per decision
	opts     fileOptions
	path     string
	part     int // the number the current file takes when it rotates
}

// sink is what File writes to: an *os.File, or in tests one whose disk
// fills up.
type sink interface {
	Write(b []byte) (int, error)
	Truncate(size int64) error
	Close() error
}

// maxBuffered bounds the lines Write keeps while the file refuses them:
// past it, new lines are dropped (and counted), not kept until memory
// runs out.
const maxBuffered = 64 << 20

// FileOption is an option of OpenFile.
type FileOption interface{ apply(*fileOptions) }

type fileOptions struct {
	count    time.Duration // 0: a line per decision
	maxBytes int64         // 0: never rotate
	keep     int
}

type optionFunc func(*fileOptions)

func (f optionFunc) apply(o *fileOptions) { f(o) }

// Counted writes the process's decisions as counts over intervals of
// every (Counter; MinCountInterval to MaxCountInterval, else OpenFile
// refuses it with ErrCountInterval): a line a second per active tenant,
// say, instead of a line per decision. Without it, a File writes each
// decision's line, as audits and tests want.
func Counted(every time.Duration) FileOption {
	return optionFunc(func(o *fileOptions) { o.count = every })
}

// The limits of Rotated.
const (
	MinRotateBytes = 4 << 10
	MaxRotateBytes = 1 << 40
	MaxRotateKeep  = 10000
)

// ErrRotation: OpenFile was given a rotation out of range.
var ErrRotation = errors.New("eventlog: rotation")

// Rotated starts a new file once the current one has reached maxBytes
// (MinRotateBytes to MaxRotateBytes; whole batches are written, so a file
// ends a batch past it, at most 100 ms of lines), renaming it PATH.N,
// with N one more than the newest part's, and deleting the oldest parts
// beyond keep (1 to MaxRotateKeep). A log's parts, oldest first, then
// PATH, are the log (OpenLog): parts are numbered from 1, so that a
// reader can tell that the oldest ones are gone. Without Rotated, the
// file grows for as long as the process writes.
func Rotated(maxBytes int64, keep int) FileOption {
	return optionFunc(func(o *fileOptions) { o.maxBytes, o.keep = maxBytes, keep })
}

// countGrace is how long after an interval's end its counts wait for
// decisions stamped before the end and logged after it: the agent's
// clock and the wall clock this File flushes by agree to well within it.
const countGrace = 50 * time.Millisecond

// OpenFile opens (appending) or creates the log at path, and flushes it
// every 100 ms until Close. Options out of range are refused
// (ErrCountInterval, ErrRotation) before anything is opened.
func OpenFile(path string, opts ...FileOption) (*File, error) {
	var o fileOptions
	for _, opt := range opts {
		opt.apply(&o)
	}
	l := &File{opts: o, path: path, stop: make(chan struct{}), done: make(chan struct{})}
	if o.count != 0 {
		c, err := NewCounter(fileBuffer{l}, o.count)
		if err != nil {
			return nil, err
		}
		l.counter = c
	}
	if o.maxBytes != 0 || o.keep != 0 {
		switch {
		case o.maxBytes < MinRotateBytes || o.maxBytes > MaxRotateBytes:
			return nil, fmt.Errorf("%w: size %d bytes: want %d to %d", ErrRotation, o.maxBytes, MinRotateBytes, int64(MaxRotateBytes))
		case o.keep < 1 || o.keep > MaxRotateKeep:
			return nil, fmt.Errorf("%w: keep %d files: want 1 to %d", ErrRotation, o.keep, MaxRotateKeep)
		}
		parts, err := logParts(path)
		if err != nil {
			return nil, err
		}
		l.part = 1
		if len(parts) > 0 {
			l.part = parts[len(parts)-1].n + 1
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	l.f, l.size = f, st.Size()
	go func() {
		defer close(l.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				l.tick()
			}
		}
	}()
	return l, nil
}

// fileBuffer is the writer a File's Counter writes to: the File's
// buffer, under the File's lock.
type fileBuffer struct{ l *File }

func (b fileBuffer) Write(e *Event) { b.l.buf = e.AppendJSON(b.l.buf) }

// tick writes the counts of the intervals that have ended, and flushes.
func (l *File) tick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counter != nil {
		l.counter.Flush(time.Now().Add(-countGrace).UnixNano())
	}
	l.flush() //nolint:errcheck // counted (Failures), and the lines kept for the next
}

// Write appends one event. It implements Writer.
func (l *File) Write(e *Event) {
	if l == nil {
		return
	}
	l.mu.Lock()
	switch {
	case len(l.buf) >= maxBuffered:
		l.failures.Add(1)
	case l.counter != nil:
		l.counter.Write(e) // a decision counted, any other event to buf
	default:
		l.buf = e.AppendJSON(l.buf) // a line, newline included
	}
	l.mu.Unlock()
}

// Flush writes what is buffered, in one write, and reports its error:
// then the lines stay buffered for the next Flush, and the file keeps no
// part of them.
func (l *File) Flush() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.flush()
}

// flush is Flush, under mu.
func (l *File) flush() error {
	if len(l.buf) == 0 {
		return nil
	}
	if err := l.write(l.buf); err != nil {
		return err
	}
	l.buf = l.buf[:0]
	return nil
}

// write writes b whole, or cuts what it wrote of it off the file again
// and reports why; under mu.
func (l *File) write(b []byte) error {
	n, err := l.f.Write(b)
	if err == nil {
		l.size += int64(n)
		if l.opts.maxBytes > 0 && l.size >= l.opts.maxBytes {
			l.rotate()
		}
		return nil
	}
	l.failures.Add(1)
	if n > 0 {
		if terr := l.f.Truncate(l.size); terr != nil {
			return fmt.Errorf("eventlog: writing %d bytes: %w; cutting the %d written off again: %w", len(b), err, n, terr)
		}
	}
	return fmt.Errorf("eventlog: writing %d bytes: %w", len(b), err)
}

// Append writes events now, after what is buffered, in one write: all of
// them reach the file or none does (the error says why, and the caller
// may append them again). It implements the journal a coordinator
// answers after.
func (l *File) Append(events ...*Event) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.flush(); err != nil {
		return err
	}
	l.batch = l.batch[:0]
	for _, e := range events {
		l.batch = e.AppendJSON(l.batch)
	}
	if len(l.batch) == 0 {
		return nil
	}
	return l.write(l.batch)
}

// Failures counts the writes that failed since the file was opened (a
// full disk, say), and the events Write dropped while maxBuffered bytes
// waited for the disk: for a metric, since the lines of Write have no
// caller to tell.
func (l *File) Failures() int64 {
	if l == nil {
		return 0
	}
	return l.failures.Load()
}

// rotate renames the current file PATH.N, opens a new PATH and deletes
// the parts beyond the ones to keep; under mu, after a whole write. A
// rotation that fails is counted (Failures), not reported: the lines it
// follows are in the file, and the file goes on growing until a later
// rotation succeeds. A process killed between the rename and the open
// leaves the parts alone, which OpenLog reads as the log.
func (l *File) rotate() {
	name := l.path + "." + strconv.Itoa(l.part)
	if err := os.Rename(l.path, name); err != nil {
		l.failures.Add(1)
		return
	}
	l.part++
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		l.failures.Add(1) // the old file, renamed, takes the lines meanwhile
		return
	}
	l.f.Close() //nolint:errcheck // written whole; a close error loses nothing of O_APPEND writes made
	l.f, l.size = f, 0
	parts, err := logParts(l.path)
	if err != nil {
		l.failures.Add(1)
		return
	}
	for len(parts) > l.opts.keep {
		if err := os.Remove(parts[0].path); err != nil {
			l.failures.Add(1)
			return
		}
		parts = parts[1:]
	}
}

// part is a rotated file of a log: PATH.N.
type part struct {
	path string
	n    int
}

// logParts lists the rotated files of the log at path, oldest first.
// Only PATH.N with N a number without leading zeros is one: PATH.1.gz,
// an operator's compressed copy, is not.
func logParts(path string) ([]part, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("eventlog: the log's rotated files: %w", err)
	}
	var out []part
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok || e.IsDir() {
			continue
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 || strconv.Itoa(n) != rest {
			continue
		}
		out = append(out, part{filepath.Join(dir, e.Name()), n})
	}
	slices.SortFunc(out, func(a, b part) int { return a.n - b.n })
	return out, nil
}

// Close writes a stop event, flushes and closes the file.
func (l *File) Close() error {
	if l == nil {
		return nil
	}
	now := time.Now().UnixNano()
	l.mu.Lock()
	if l.counter != nil {
		l.counter.FlushAll(now)
	}
	l.mu.Unlock()
	l.Write(&Event{T: now, Kind: Stop})
	close(l.stop)
	<-l.done
	err := l.Flush()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
