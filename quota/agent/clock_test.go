package agent

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/eventlog"
)

// TestEventTimesAreTheLimiters: the agent stamps its events on the
// limiter's clock from the limiter's own origin, so an event the limiter
// dates at is at Start + at in the log, to the nanosecond. (The agent
// read time.Now apart from the limiter: every region event came early by
// the gap between the two reads, and a region's install could precede
// the grant it installed in the merged log.)
func TestEventTimesAreTheLimiters(t *testing.T) {
	cfg, err := config.ParseConfig([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Config: cfg, Name: "eu", Coordinators: []string{"http://127.0.0.1:1"}, Listen: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "eu.jsonl")
	if a.events, err = eventlog.OpenFile(path); err != nil {
		t.Fatal(err)
	}
	at := a.lim.Now()
	if err := (agentJournal{a}).Returned(at, quota.Return{Tenant: "acme", Region: "eu", LeaseID: 1}); err != nil {
		t.Fatal(err)
	}
	if err := a.events.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []eventlog.Event
	if err := eventlog.ReadLog(f, collector{&got}); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0].Kind != eventlog.Return {
		t.Fatalf("the log holds %+v; want the return first", got)
	}
	if want := a.lim.Start().UnixNano() + at; got[0].T != want {
		t.Fatalf("the return the limiter dated %d ns is at %d in the log; want %d (the limiter's origin + %d): %d ns apart",
			at, got[0].T, want, at, want-got[0].T)
	}
}

type collector struct{ out *[]eventlog.Event }

func (c collector) Write(e *eventlog.Event) { *c.out = append(*c.out, *e) }
