package chaos

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/eventlog"
)

// labActions is a script with every kind of action, as a person at the
// console's quota lab would make it: all traffic into us, eu cut off and
// healed, the coordinator crashed, then paused with a failover, and clocks
// skewed.
func labActions() []Action {
	return []Action{
		{At: 20 * s, Kind: ActShift, Rates: rates(0, 600, 0)},
		{At: 30 * s, Kind: ActSkew, Region: "us", Drift: 500e-6},
		{At: 35 * s, Kind: ActSkew, Drift: -500e-6},
		{At: 40 * s, Kind: ActPartition, Region: "us"},
		{At: 60 * s, Kind: ActShift, Rates: rates(300, 150, 150)},
		{At: 70 * s, Kind: ActHeal, Region: "us"},
		{At: 80 * s, Kind: ActCrash, Down: 5 * s},
		{At: 100 * s, Kind: ActPause, Down: 3 * s, Wake: 8 * s},
		{At: 115 * s, Kind: ActSkew, Region: "eu", Drift: -500e-6},
	}
}

var labStart = rates(360, 180, 60)

func scripted(t *testing.T, cfg Config, actions []Action) Config {
	t.Helper()
	sch, err := Script(cfg, labStart, actions)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Schedule = sch
	return cfg
}

// TestScriptedFaultsHold: every kind of action, in both modes: the checker
// finds nothing, and each fault happened (two restarts, a cut, a fence).
func TestScriptedFaultsHold(t *testing.T) {
	for _, mode := range []quota.Mode{quota.Hard, quota.BestEffort} {
		rec := newRecorder()
		cfg := scripted(t, Config{Seed: 11, Mode: mode, Duration: 150 * s, Log: rec}, labActions())
		sum := mustRun(t, cfg)
		mustHold(t, sum)
		if sum.Epochs != 3 || sum.Cuts != 1 || sum.Outages != 2 {
			t.Fatalf("%v: %d epochs, %d cuts, %d outages; want 3, 1, 2", mode, sum.Epochs, sum.Cuts, sum.Outages)
		}
		if rec.events[eventlog.Fenced] != 1 || rec.events[eventlog.Skew] != 3 || rec.events[eventlog.Partition] != 1 || rec.events[eventlog.Heal] != 1 {
			t.Fatalf("%v: events %v: want a fence, three skews, a partition and a heal", mode, rec.events)
		}
		// us, cut off with all the traffic, stops within a lease in hard mode.
		var late int64
		for _, v := range rec.admitted["us"][51:60] {
			late += v
		}
		if mode == quota.Hard && late != 0 {
			t.Fatalf("hard mode: us admitted %d tokens 11–20 s into its partition, with no lease", late)
		}
		t.Logf("%v: worst window %.1f tokens from R·Δ + B; us admitted %d in seconds 51–59 of its cut", mode, sum.WorstExcess, late)
	}
}

func logOf(t *testing.T, cfg Config) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := eventlog.NewJSONWriter(&buf)
	cfg.Log = w
	mustRun(t, cfg)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestScriptedRunReplays: the same seed and actions give the same log,
// byte for byte; another seed another.
func TestScriptedRunReplays(t *testing.T) {
	cfg := scripted(t, Config{Seed: 12, Duration: 130 * s, Sample: 100 * time.Millisecond}, labActions())
	a, b := logOf(t, cfg), logOf(t, cfg)
	if !bytes.Equal(a, b) {
		t.Fatal("the same seed and actions gave two different logs")
	}
	cfg.Seed = 13
	if bytes.Equal(a, logOf(t, cfg)) {
		t.Fatal("seeds 12 and 13 gave the same log")
	}
}

// TestSamplesChangeNothing: the run with samples is the run without them,
// sample lines aside.
func TestSamplesChangeNothing(t *testing.T) {
	cfg := scripted(t, Config{Seed: 14, Duration: 130 * s}, labActions())
	plain := logOf(t, cfg)
	cfg.Sample = 100 * time.Millisecond
	var kept [][]byte
	n := 0
	for line := range bytes.SplitAfterSeq(logOf(t, cfg), []byte("\n")) {
		if bytes.Contains(line, []byte(`"ev":"sample"`)) {
			n++
			continue
		}
		kept = append(kept, line)
	}
	if want := 1300 * 3; n != want {
		t.Fatalf("%d sample lines, want %d (three regions every 100 ms)", n, want)
	}
	if !bytes.Equal(plain, bytes.Join(kept, nil)) {
		t.Fatal("sampling changed the run")
	}
}

// TestActionsLeaveThePastAlone: an action at t changes nothing before t,
// so that the lab can add one at the moment shown and play on.
func TestActionsLeaveThePastAlone(t *testing.T) {
	acts := labActions()
	for k := 1; k < len(acts); k++ {
		before := logOf(t, scripted(t, Config{Seed: 15, Duration: 130 * s}, acts[:k]))
		after := logOf(t, scripted(t, Config{Seed: 15, Duration: 130 * s}, acts[:k+1]))
		at := acts[k].At
		prefix := func(log []byte) []byte {
			var out []byte
			for line := range bytes.SplitAfterSeq(log, []byte("\n")) {
				e, err := eventlog.ParseEvent(line)
				if err != nil || e.T >= int64(at) {
					break
				}
				out = append(out, line...)
			}
			return out
		}
		p, q := prefix(before), prefix(after)
		if len(p) == 0 || !bytes.Equal(p, q) {
			t.Fatalf("step %d: adding %v at %v changed the run before it", k, acts[k].Kind, at)
		}
		if bytes.Equal(before, after) {
			t.Fatalf("step %d: adding %v at %v changed nothing at all", k, acts[k].Kind, at)
		}
	}
}

// TestClockChangeIsContinuous: a skewed clock reads on from where it was,
// never back, and then runs at its new rate.
func TestClockChangeIsContinuous(t *testing.T) {
	for i, tc := range []struct {
		c     Clock
		at    int64
		drift float64
	}{
		{Clock{}, int64(30 * s), 500e-6},
		{Clock{Offset: 123456789, Drift: 500e-6}, int64(77*s) + 3, -500e-6},
		{Clock{Offset: -500 * time.Millisecond, Drift: -500e-6}, int64(3600*s) + 999, 1e-7},
		{Clock{Drift: 333e-6}, 1, 0},
	} {
		n := tc.c.skewed(tc.at, tc.drift)
		if got, was := n.local(tc.at), tc.c.local(tc.at); got < was || got > was+2 {
			t.Errorf("step %d: the clock read %d before the change and %d after", i, was, got)
		}
		later := tc.at + int64(10*s)
		if d := float64(n.local(later)-n.local(tc.at)) - 1e10*(1+tc.drift); math.Abs(d) > 2 {
			t.Errorf("step %d: 10 s later the clock advanced %v ns off its new rate", i, d)
		}
	}
}

// TestScriptErrors: each out-of-range action is refused with its index
// and field, and nothing runs.
func TestScriptErrors(t *testing.T) {
	cfg := Config{Duration: 60 * s}
	for i, tc := range []struct {
		start   map[string]float64
		actions []Action
		field   string // "" for the traffic start
		want    string
	}{
		{rates(-1, 0, 0), nil, "", "eu: -1 tokens a second"},
		{map[string]float64{"mars": 1}, nil, "", `region "mars"`},
		{labStart, []Action{{At: 60 * s, Kind: ActShift}}, "actions[0].at", "less than the run's length"},
		{labStart, []Action{{At: 20 * s, Kind: ActShift}, {At: 10 * s, Kind: ActShift}}, "actions[1].at", "in order of time"},
		{labStart, []Action{{At: 1 * s, Kind: ActShift, Rates: rates(0, math.NaN(), 0)}}, "actions[0].rates", "us: NaN"},
		{labStart, []Action{{At: 1 * s, Kind: ActPartition, Region: "mars"}}, "actions[0].region", "want one of eu, us, ap"},
		{labStart, []Action{{At: 1 * s, Kind: ActPartition, Region: "eu"}, {At: 2 * s, Kind: ActPartition, Region: "eu"}}, "actions[1].region", "already cut off"},
		{labStart, []Action{{At: 1 * s, Kind: ActHeal, Region: "eu"}}, "actions[0].region", "not cut off"},
		{labStart, []Action{{At: 1 * s, Kind: ActCrash}}, "actions[0].down", "above 0"},
		{labStart, []Action{{At: 1 * s, Kind: ActCrash, Down: 5 * s, Wake: s}}, "actions[0].wake", "never wakes"},
		{labStart, []Action{{At: 1 * s, Kind: ActPause, Down: 5 * s}}, "actions[0].wake", "above 0"},
		{labStart, []Action{{At: 1 * s, Kind: ActPause, Down: 5 * s, Wake: 9 * s}, {At: 5 * s, Kind: ActCrash, Down: s}}, "actions[1].at", "paused until 10s"},
		{labStart, []Action{{At: 1 * s, Kind: ActSkew, Region: "eu", Drift: 0.001}}, "actions[0].drift", "±500 ppm"},
		{labStart, []Action{{At: 1 * s, Kind: ActSkew, Region: "mars"}}, "actions[0].region", `"" for the coordinator`},
		{labStart, []Action{{At: 1 * s, Kind: 99}}, "actions[0].kind", "want one of shift, partition, heal, crash, pause, skew"},
	} {
		_, err := Script(cfg, tc.start, tc.actions)
		if err == nil || !errors.Is(err, quota.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("step %d: %v, want a configuration error mentioning %q", i, err, tc.want)
			continue
		}
		var ae *ActionError
		if errors.As(err, &ae) != (tc.field != "") {
			t.Errorf("step %d: %v: an action error is %v, want %v", i, err, !(tc.field != ""), tc.field != "")
		} else if ae != nil {
			if got := "actions[" + string(rune('0'+ae.Index)) + "]." + ae.Field; got != tc.field {
				t.Errorf("step %d: field %s, want %s", i, got, tc.field)
			}
		}
	}
	if _, err := Script(cfg, labStart, make([]Action, MaxActions+1)); err == nil {
		t.Error("Script took more than MaxActions actions")
	}
	if _, err := Run(Config{Duration: 60 * s, Sample: time.Microsecond}); err == nil || !strings.Contains(err.Error(), "sample 1µs") {
		t.Errorf("a sample of 1µs: %v", err)
	}
	for _, k := range []ActionKind{ActShift, ActPartition, ActHeal, ActCrash, ActPause, ActSkew} {
		if got, err := ParseActionKind(k.String()); err != nil || got != k {
			t.Errorf("ParseActionKind(%q) = %v, %v", k.String(), got, err)
		}
	}
	if _, err := ParseActionKind("meteor"); err == nil {
		t.Error("ParseActionKind(meteor) accepted")
	}
}

// TestTimeline: the timeline's sums are the run's, its spans are the
// script's, and its worst window is the checker's.
func TestTimeline(t *testing.T) {
	step := 100 * time.Millisecond
	for _, mode := range []quota.Mode{quota.Hard, quota.BestEffort} {
		tl := NewTimeline(DefaultRegions, 130*s, step)
		cfg := scripted(t, Config{Seed: 16, Mode: mode, Duration: 130 * s, Sample: step, Log: tl}, labActions())
		sum := mustRun(t, cfg)
		if len(tl.Steps) != 1300 {
			t.Fatalf("%d steps, want 1300", len(tl.Steps))
		}
		admitted, offered := map[string]int64{}, map[string]int64{}
		worst := 0.0
		var noLease int64
		for k, st := range tl.Steps {
			worst = max(worst, st.Excess)
			for i, r := range tl.Regions {
				rs := st.Regions[i]
				admitted[r] += rs.Admitted
				offered[r] += rs.Offered
				noLease += rs.NoLease
				if rs.Lease == 0 && (rs.Rate != 0 || rs.Balance != 0) {
					t.Fatalf("%v: step %d, %s: a rate or balance without a lease: %+v", mode, k, r, rs)
				}
				if rs.Balance > rs.Burst {
					t.Fatalf("%v: step %d, %s: balance %v over the burst %v", mode, k, r, rs.Balance, rs.Burst)
				}
			}
		}
		for _, r := range tl.Regions {
			if admitted[r] != sum.Admits[r] || offered[r] != sum.Offered[r] {
				t.Fatalf("%v: %s admitted %d of %d in the timeline, %d of %d in the run", mode, r, admitted[r], offered[r], sum.Admits[r], sum.Offered[r])
			}
		}
		if noLease != sum.NoLeaseAdmitted {
			t.Fatalf("%v: %d admitted without a lease in the timeline, %d in the run", mode, noLease, sum.NoLeaseAdmitted)
		}
		if want := max(0, sum.WorstExcess+6000); math.Abs(worst-want) > 1e-6 {
			t.Fatalf("%v: the timeline's worst window is %v beyond R·Δ, the checker's %v", mode, worst, want)
		}
		at := func(d time.Duration) Step { return tl.Steps[int(d/step)] }
		us := 1
		if !at(40 * s).Regions[us].Cut || !at(69*s + 900*time.Millisecond).Regions[us].Cut || at(39*s + 900*time.Millisecond).Regions[us].Cut || at(70 * s).Regions[us].Cut {
			t.Fatalf("%v: us's cut is not drawn from 40 s to 70 s", mode)
		}
		if !at(80*s).Down || !at(84*s+900*time.Millisecond).Down || at(85*s).Down || at(79*s+900*time.Millisecond).Down {
			t.Fatalf("%v: the crash is not drawn from 80 s to 85 s", mode)
		}
		if !at(100*s).Down || at(103*s).Down || at(102*s).Epoch != 2 || at(103*s).Epoch != 3 {
			t.Fatalf("%v: the pause is not drawn from 100 s until the successor at 103 s", mode)
		}
		if d := at(25 * s).Regions[us].Demand; d != 600 {
			t.Fatalf("%v: us's demand at 25 s is %v, want 600", mode, d)
		}
		if d := at(10 * s).Regions[0].Demand; d != 360 {
			t.Fatalf("%v: eu's demand at 10 s is %v, want 360", mode, d)
		}
		// Shares are drawn: at 30 s, with all traffic in us, its lease holds
		// most of R.
		if r := at(30 * s).Regions[us].Rate; r < 400*quota.One {
			t.Fatalf("%v: us's lease at 30 s has rate %v, want most of R", mode, r)
		}
	}
}
