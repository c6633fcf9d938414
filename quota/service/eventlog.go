package service

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/chaos"
)

// EventLog writes the chaos harness's JSON-lines event log from a real
// process (t_ns: Unix nanoseconds), so that afloat quota check can check
// a cluster's logs merged. It appends: a process that restarts continues
// its file. Lines reach the file only whole, in one write each batch, so
// that a process killed mid-run leaves no line cut in half; Flush writes
// at once (a coordinator flushes before it answers, so that no grant a
// region installs is missing from the log). A nil *EventLog logs nothing.
// It is safe for concurrent use.
type EventLog struct {
	mu   sync.Mutex
	f    *os.File
	buf  []byte
	err  error
	stop chan struct{}
	done chan struct{}
}

// OpenEventLog opens (appending) or creates the log at path, and flushes
// it every 100 ms until Close.
func OpenEventLog(path string) (*EventLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("service: event log: %w", err)
	}
	l := &EventLog{f: f, stop: make(chan struct{}), done: make(chan struct{})}
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

// Write appends one event.
func (l *EventLog) Write(e *chaos.Event) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.buf = e.AppendJSON(l.buf) // a line, newline included
	l.mu.Unlock()
}

// Flush writes what is buffered, in one write.
func (l *EventLog) Flush() error {
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
func (l *EventLog) Close() error {
	if l == nil {
		return nil
	}
	l.Write(&chaos.Event{T: time.Now().UnixNano(), Ev: "stop"})
	close(l.stop)
	<-l.done
	err := l.Flush()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// starts writes a start event for each tenant: the checker learns R, B,
// the regions, E and the mode from it.
func (l *EventLog) starts(at int64, tenants []quota.Tenant) {
	for _, t := range tenants {
		l.Write(&chaos.Event{T: at, Ev: "start", Tenant: t.Name, Rate: t.Rate, Burst: t.Burst,
			N: int64(len(t.Regions)), Balance: t.Emergency, Why: t.Mode.String()})
	}
}
