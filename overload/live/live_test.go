package live

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestSoakShort is the short version of `afloat bench bulkhead --soak 10m`:
// twelve seconds at ten times the server's capacity through afloat's
// adaptive bulkhead, in a real server process on loopback. The server's
// heap stays flat and its goroutines come back to where they were.
//
// It runs on the wall clock for twelve seconds, so it skips under -short:
// make test-long runs it.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("a 12-second wall-clock soak: make test-long runs it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	samples, err := Soak(ctx, "", "afloat-adaptive", 10, 12*time.Second, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		t.Logf("%5.1f s: heap %6.2f MB, %4d goroutines, %6d answered, %6d refused",
			s.At.Seconds(), float64(s.HeapInuse)/1e6, s.Goroutines, s.Good, s.Rejected)
	}
	if err := Flat(samples, 4<<20); err != nil {
		t.Fatal(err)
	}
	// Ten times the capacity measured at the start: the bulkhead refuses
	// most of it. Not nine refused for one answered: the capacity is
	// measured once, on a machine shared with make test-long's other
	// packages, and the server's share of the cores can double after (seen:
	// 1,859 answered, 7,627 refused, the server answering at twice the
	// capacity measured); an unprotected server refuses nothing.
	last := samples[len(samples)-1]
	if last.Good == 0 || last.Rejected < 2*last.Good {
		t.Errorf("%d answered, %d refused: want the bulkhead to answer what the server can and refuse the rest", last.Good, last.Rejected)
	}
}

func TestLiveConfigErrors(t *testing.T) {
	ctx := context.Background()
	for i, c := range []Config{
		{Work: time.Microsecond},
		{Work: 10 * time.Millisecond, Deadline: time.Millisecond},
		{Phases: []Phase{{"x", 0, time.Second}}},
		{Phases: []Phase{{"x", 2, -time.Second}}},
		{Modes: []string{"magic"}},
		{Modes: []string{}},
		{Attempts: -1},
		{Attempts: MaxAttempts + 1},
	} {
		if _, err := Run(ctx, c); !errors.Is(err, ErrConfig) {
			t.Errorf("step %d: Run(%+v) = %v, want ErrConfig", i, c, err)
		}
	}
	if _, err := Soak(ctx, "", "magic", 10, time.Second, time.Second, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("Soak with an unknown mode: %v", err)
	}
	for i, c := range []struct {
		load        float64
		d, interval time.Duration
	}{
		{0, time.Minute, time.Second},
		{math.NaN(), time.Minute, time.Second},
		{math.Inf(1), time.Minute, time.Second},
		{101, time.Minute, time.Second},
		{10, 0, time.Second},
		{10, -time.Second, time.Second},
		{10, time.Nanosecond, time.Second},
		{10, 4*time.Second - 1, time.Second}, // too short for three samples under load
		{10, 25 * time.Hour, time.Second},
		{10, time.Minute, 0},
		{10, time.Minute, time.Millisecond},
		{10, 24 * time.Hour, 2 * time.Hour},
	} {
		if _, err := Soak(ctx, "", "none", c.load, c.d, c.interval, nil); !errors.Is(err, ErrConfig) {
			t.Errorf("step %d: Soak at %v for %v every %v = %v, want ErrConfig", i, c.load, c.d, c.interval, err)
		}
	}
	// Each refusal names the argument and its range.
	for i, c := range []struct {
		mode        string
		load        float64
		d, interval time.Duration
		want        string
	}{
		{"none", 0, time.Minute, time.Second, "soak load 0 × capacity: want above 0 and at most 100"},
		{"none", 10, time.Minute, 0, "soak interval 0s: want 1s to 1h0m0s"},
		{"none", 10, time.Minute, 20 * time.Second, "soak duration 1m0s: want 1m20s (4 × the interval) to 24h0m0s"},
		{"prayer", 10, time.Minute, time.Second, `soak mode "prayer": want one of none, afloat-fixed, afloat-adaptive, failsafe-go`},
	} {
		if err := CheckSoak(c.mode, c.load, c.d, c.interval); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("step %d: CheckSoak = %v; want %q", i, err, c.want)
		}
	}
	if err := Flat(make([]SoakSample, 4), 0); err == nil {
		t.Error("Flat judged 4 samples: two under load cannot show growth")
	}
	if _, err := Run(ctx, Config{Phases: []Phase{{"x", math.NaN(), time.Second}}}); !errors.Is(err, ErrConfig) {
		t.Errorf("Run at NaN × capacity: %v", err)
	}
}
