package eventlog

import (
	"fmt"
	"os"
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
// File is the one part of the package that reads the wall clock: its
// flush ticker, and the time of the stop event Close writes.
type File struct {
	mu       sync.Mutex
	f        sink
	size     int64 // the file's length as written whole
	buf      []byte
	batch    []byte // Append's lines, encoded
	failures atomic.Int64
	stop     chan struct{}
	done     chan struct{}
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

// OpenFile opens (appending) or creates the log at path, and flushes it
// every 100 ms until Close.
func OpenFile(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	l := &File{f: f, size: st.Size(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				l.Flush() //nolint:errcheck // counted (Failures), and the lines kept for the next
			}
		}
	}()
	return l, nil
}

// Write appends one event. It implements Writer.
func (l *File) Write(e *Event) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if len(l.buf) < maxBuffered {
		l.buf = e.AppendJSON(l.buf) // a line, newline included
	} else {
		l.failures.Add(1)
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

// Close writes a stop event, flushes and closes the file.
func (l *File) Close() error {
	if l == nil {
		return nil
	}
	l.Write(&Event{T: time.Now().UnixNano(), Kind: Stop})
	close(l.stop)
	<-l.done
	err := l.Flush()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
