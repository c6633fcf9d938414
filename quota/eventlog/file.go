package eventlog

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// File is the event log of a real process (afloat quota coordinator and
// region --event-log): T and the lease intervals in Unix nanoseconds, so
// that afloat quota check can check a cluster's logs merged. It appends:
// a process that restarts continues its file. Lines reach the file only
// whole, in one write each batch, so that a process killed mid-run
// leaves no line cut in half; Flush writes at once (a coordinator
// flushes before it answers, so that no grant a region installs is
// missing from the log), and File flushes every 100 ms on its own. A nil
// *File logs nothing. It is safe for concurrent use.
//
// File is the one part of the package that reads the wall clock: its
// flush ticker, and the time of the stop event Close writes.
type File struct {
	mu   sync.Mutex
	f    *os.File
	buf  []byte
	err  error
	stop chan struct{}
	done chan struct{}
}

// OpenFile opens (appending) or creates the log at path, and flushes it
// every 100 ms until Close.
func OpenFile(path string) (*File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	l := &File{f: f, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				l.Flush() //nolint:errcheck // kept in l.err, reported by Close
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
	l.buf = e.AppendJSON(l.buf) // a line, newline included
	l.mu.Unlock()
}

// Flush writes what is buffered, in one write, and reports the first
// error of any write since the file was opened.
func (l *File) Flush() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 && l.err == nil {
		_, l.err = l.f.Write(l.buf)
		l.buf = l.buf[:0]
	}
	return l.err
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
