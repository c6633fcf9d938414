package eventlog

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

const ms = int64(time.Millisecond)

// clusterLog is a correct run of two regions as their processes would log
// it: the coordinator grants each region a lease of 50/s (burst 50) every
// second, the region installs it 1 ms later (ending its use of the last
// one), the coordinator ends the superseded lease 2 ms after that, and
// each region admits 4 tokens every 100 ms — 80/s of R = 100 — until it
// returns its last lease at 5.5 s, ended half a millisecond later. eu's
// clock is shifted by euSkew and us's by usSkew: all the events its
// process writes.
func clusterLog(euSkew, usSkew time.Duration) []Event {
	ev := []Event{{Kind: Start, Tenant: "t", Rate: 100 * quota.One, Burst: 100 * quota.One, N: 2, Why: "hard"}}
	id := uint64(0)
	for ri, r := range []string{"eu", "us"} {
		skew := int64(euSkew)
		if r == "us" {
			skew = int64(usSkew)
		}
		off := int64(ri) * 300 * ms
		var prev uint64
		for k := range int64(5) {
			id++
			g := k*int64(time.Second) + off
			ev = append(ev,
				Event{T: g, Kind: Lease, Tenant: "t", Region: r, ID: id, Epoch: 1, Rate: 50 * quota.One, Burst: 50 * quota.One,
					Activates: g, Expires: g + 2*int64(time.Second)},
				Event{T: g + ms + skew, Kind: Install, Tenant: "t", Region: r, ID: id})
			if prev != 0 {
				ev = append(ev, Event{T: g + ms + skew, Kind: Supersede, Tenant: "t", Region: r, ID: prev},
					Event{T: g + 3*ms, Kind: End, Tenant: "t", Region: r, ID: prev, Why: "superseded"})
			}
			prev = id
		}
		end := 5500*ms + off
		for at := off + 2*ms; at < end; at += 100 * ms {
			ev = append(ev, Event{T: at + skew, Kind: Admit, Tenant: "t", Region: r, N: 4})
		}
		ev = append(ev, Event{T: end + skew, Kind: Return, Tenant: "t", Region: r, ID: prev},
			Event{T: end + ms/2, Kind: End, Tenant: "t", Region: r, ID: prev, Why: "returned"})
	}
	return ev
}

// check runs a Checker over events already in order.
func check(events []Event) Report {
	c := NewChecker()
	var end int64
	for i := range events {
		c.Write(&events[i])
		end = max(end, events[i].T)
	}
	return c.Finish(end)
}

// byTime is a merge by time alone, as Merge was before it ordered by
// cause: what the skew test shows to fail.
func byTime(events []Event) []Event {
	out := slices.Clone(events)
	slices.SortStableFunc(out, func(a, b Event) int {
		if c := cmp.Compare(a.T, b.T); c != 0 {
			return c
		}
		return cmp.Compare(mergeRank(a.Kind), mergeRank(b.Kind))
	})
	return out
}

// TestMergeCorrectsSkew: with the regions' clocks 5 ms behind (eu) and
// ahead (us) of the coordinator's, a correct run merged by time alone
// fails — eu installs leases before they were granted, us spends leases
// after the ends its returns caused — and merged by cause it passes, with
// the corrections reported: eu 4 ms later (its installs came 1 ms after
// the grants), us 4.5 ms earlier (its return came half a millisecond
// before the end). Each real violation planted in the skewed run is
// still caught: too many admissions, a lease spent after the coordinator
// ended it, an install long before any grant (beyond MaxSkew, no clock's
// error).
func TestMergeCorrectsSkew(t *testing.T) {
	if rep := check(byTime(clusterLog(0, 0))); rep.Violations != 0 {
		t.Fatalf("the run on one clock: %d violations %q", rep.Violations, rep.Messages)
	}
	if merged, shifts := Merge(clusterLog(0, 0)); len(shifts) != 0 || check(merged).Violations != 0 {
		t.Fatalf("the run on one clock: shifts %+v, %d violations", shifts, check(merged).Violations)
	}
	skewed := clusterLog(-5*time.Millisecond, 5*time.Millisecond)
	rep := check(byTime(skewed))
	if msgs := strings.Join(rep.Messages, "\n"); rep.Violations == 0 || !strings.Contains(msgs, "never granted") || !strings.Contains(msgs, "spent under lease") {
		t.Fatalf("skewed ±5 ms, merged by time alone: %d violations %q; want installs never granted and leases spent after their end", rep.Violations, rep.Messages)
	}
	merged, shifts := Merge(skewed)
	if rep := check(merged); rep.Violations != 0 {
		t.Fatalf("skewed ±5 ms, merged by cause: %d violations %q", rep.Violations, rep.Messages)
	}
	want := []ClockShift{{Region: "eu", Since: -4 * ms, Shift: 4 * time.Millisecond, Lease: 1}, {Region: "us", Since: 306 * ms, Shift: -4500 * time.Microsecond, Lease: 10}}
	if !slices.Equal(shifts, want) {
		t.Fatalf("shifts %+v, want %+v", shifts, want)
	}

	for i, plant := range []struct {
		events func([]Event) []Event
		want   string
	}{
		// eu admits 150 tokens at once: more than R·Δ + B in any window.
		{func(ev []Event) []Event {
			return append(ev, Event{T: 2500*ms - 5*ms, Kind: Admit, Tenant: "t", Region: "eu", N: 150})
		}, "R·Δ + B is"},
		// us keeps spending its last lease 50 ms after its return ended it.
		{func(ev []Event) []Event {
			for j := range ev {
				if ev[j].Kind == Return && ev[j].Region == "us" {
					ev[j].T += 50 * ms
				}
			}
			return ev
		}, "spent under lease 10"},
		// eu installs a lease 2 s before it is granted.
		{func(ev []Event) []Event {
			return append(ev, Event{T: 3 * int64(time.Second), Kind: Lease, Tenant: "t", Region: "eu", ID: 99, Epoch: 1,
				Rate: quota.One, Burst: quota.One, Activates: 3 * int64(time.Second), Expires: 4 * int64(time.Second)},
				Event{T: int64(time.Second) + 500*ms, Kind: Install, Tenant: "t", Region: "eu", ID: 99})
		}, "which was never granted"},
	} {
		merged, got := Merge(plant.events(clusterLog(-5*time.Millisecond, 5*time.Millisecond)))
		rep := check(merged)
		if rep.Violations == 0 || !strings.Contains(rep.Messages[0], plant.want) {
			t.Errorf("step %d: %d violations %q, want the first to be the one planted, mentioning %q", i, rep.Violations, rep.Messages, plant.want)
		}
		if got[0] != want[0] {
			t.Errorf("step %d: eu shifted %+v, want %+v as without the violation", i, got[0], want[0])
		}
	}
}

// TestCheckLogsReportsSkew: the skewed run as three processes' logs (the
// coordinator's, eu's, us's): CheckLogs finds no violation and reports
// the corrections it made, which afloat quota check prints.
func TestCheckLogsReportsSkew(t *testing.T) {
	files := map[string][]byte{}
	var end int64
	for _, e := range clusterLog(-5*time.Millisecond, 5*time.Millisecond) {
		name := "coordinator"
		if regionKind(e.Kind) {
			name = e.Region
		}
		if e.Kind == Start {
			for _, n := range []string{"coordinator", "eu", "us"} {
				files[n] = e.AppendJSON(files[n])
			}
			continue
		}
		files[name] = e.AppendJSON(files[name])
		end = max(end, e.T)
	}
	var in []Log
	for _, n := range []string{"coordinator", "eu", "us"} {
		stop := Event{T: end + 1, Kind: Stop}
		in = append(in, Log{Name: n, R: strings.NewReader(string(stop.AppendJSON(files[n])))})
	}
	res, err := CheckLogs(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []ClockShift{{Region: "eu", Since: -4 * ms, Shift: 4 * time.Millisecond, Lease: 1}, {Region: "us", Since: 306 * ms, Shift: -4500 * time.Microsecond, Lease: 10}}
	if res.Violations != 0 || !slices.Equal(res.Skew, want) {
		t.Fatalf("%d violations %q, skew %+v; want none, and %+v", res.Violations, res.Messages, res.Skew, want)
	}
}

// restartLog is a correct run of one region, eu, served by two agent
// processes in turn, each logging on its own clock: the first installs
// the leases granted at 0, 1 and 2 s and returns the last at 2.5 s; the
// second starts at 2.6 s and installs those of 3 and 4 s, returning the
// last at 5.5 s. Each install comes 1 ms after its grant and each return
// half a millisecond before its end, by the coordinator's clock. The
// first process's clock is off by first, the second's by second. The
// logs are the coordinator's and one per process, each beginning with
// its start event.
func restartLog(first, second time.Duration) (coordinator, eu1, eu2 []Event) {
	start := Event{Kind: Start, Tenant: "t", Rate: 100 * quota.One, Burst: 100 * quota.One, N: 1, Why: "hard"}
	coordinator, eu1, eu2 = []Event{start}, []Event{start}, []Event{start}
	eu2[0].T = 2600*ms + int64(second)
	var prev uint64
	for k := range int64(5) {
		id := uint64(k + 1)
		g := k * int64(time.Second)
		coordinator = append(coordinator, Event{T: g, Kind: Lease, Tenant: "t", Region: "eu", ID: id, Epoch: 1,
			Rate: 50 * quota.One, Burst: 50 * quota.One, Activates: g, Expires: g + 2*int64(time.Second)})
		log, skew := &eu1, int64(first)
		if k >= 3 {
			log, skew = &eu2, int64(second)
		}
		*log = append(*log, Event{T: g + ms + skew, Kind: Install, Tenant: "t", Region: "eu", ID: id})
		if prev != 0 && k != 3 {
			*log = append(*log, Event{T: g + ms + skew, Kind: Supersede, Tenant: "t", Region: "eu", ID: prev})
			coordinator = append(coordinator, Event{T: g + 3*ms, Kind: End, Tenant: "t", Region: "eu", ID: prev, Why: "superseded"})
		}
		prev = id
		for at := g + 2*ms; at < g+int64(time.Second) && (k != 2 || at < 2500*ms); at += 100 * ms {
			*log = append(*log, Event{T: at + skew, Kind: Admit, Tenant: "t", Region: "eu", N: 4})
		}
		if k == 2 || k == 4 {
			ret := g + 500*ms
			if k == 4 {
				ret = g + int64(time.Second) + 500*ms
			}
			*log = append(*log, Event{T: ret + skew, Kind: Return, Tenant: "t", Region: "eu", ID: id})
			coordinator = append(coordinator, Event{T: ret + ms/2, Kind: End, Tenant: "t", Region: "eu", ID: id, Why: "returned"})
		}
	}
	return coordinator, eu1, eu2
}

// TestMergeCorrectsEachProcess: a region's agents are each a clock. The
// first eu agent's clock is 5 ms behind the coordinator's, the one that
// followed it 5 ms ahead — each read the wall clock when it started,
// and the wall clock was stepped in between. No one shift of the region
// puts every grant before its install and every end of use before the
// end it caused: a merge that takes the region for one clock reported
// "spent under lease" violations. Merged process by process, the run
// passes with both corrections reported, and a lease the second agent
// spent 50 ms past its return is still caught.
func TestMergeCorrectsEachProcess(t *testing.T) {
	for _, tc := range []struct {
		first, second time.Duration
		want          []ClockShift
	}{
		{0, 0, nil},
		{-5 * time.Millisecond, 5 * time.Millisecond, []ClockShift{
			{Region: "eu", Since: -4 * ms, Shift: 4 * time.Millisecond, Lease: 1},
			{Region: "eu", Since: 3006 * ms, Shift: -4500 * time.Microsecond, Lease: 5}}},
		{40 * time.Millisecond, -3 * time.Millisecond, []ClockShift{
			{Region: "eu", Since: 41 * ms, Shift: -39500 * time.Microsecond, Lease: 3},
			{Region: "eu", Since: 2998 * ms, Shift: 2 * time.Millisecond, Lease: 4}}},
	} {
		coordinator, eu1, eu2 := restartLog(tc.first, tc.second)
		all := slices.Concat(coordinator, eu1, eu2)
		merged, shifts := Merge(all)
		if rep := check(merged); rep.Violations != 0 || !slices.Equal(shifts, tc.want) {
			t.Errorf("clocks %v and %v: %d violations %q, shifts %+v; want none, and %+v", tc.first, tc.second, rep.Violations, rep.Messages, shifts, tc.want)
		}
		var in []Log
		for i, l := range [][]Event{coordinator, eu1, eu2} {
			var b []byte
			for _, e := range l {
				b = e.AppendJSON(b)
			}
			stop := Event{T: 6 * int64(time.Second), Kind: Stop}
			in = append(in, Log{Name: fmt.Sprint("log", i), R: strings.NewReader(string(stop.AppendJSON(b)))})
		}
		res, err := CheckLogs(in, nil)
		if err != nil || res.Violations != 0 || !slices.Equal(res.Skew, tc.want) {
			t.Errorf("clocks %v and %v, CheckLogs: %v, %d violations %q, skew %+v; want none, and %+v", tc.first, tc.second, err, res.Violations, res.Messages, res.Skew, tc.want)
		}
		// The second agent spends its last lease 50 ms past its return.
		for i := range eu2 {
			if eu2[i].Kind == Return {
				eu2[i].T += 50 * ms
			}
		}
		merged, _ = Merge(slices.Concat(coordinator, eu1, eu2))
		if rep := check(merged); rep.Violations == 0 || !strings.Contains(strings.Join(rep.Messages, "\n"), "spent under lease 5") {
			t.Errorf("clocks %v and %v, lease 5 spent past its return: %d violations %q; want it caught", tc.first, tc.second, rep.Violations, rep.Messages)
		}
	}
}
