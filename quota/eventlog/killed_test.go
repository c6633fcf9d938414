package eventlog

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

const sec = int64(time.Second)

// killedRun is a run of one hard tenant (R 100 a second, B 100) in one
// region, eu, whose agent is killed (kill -9) and restarted with the same
// event log, as the docs tell an operator to. The coordinator grants eu
// lease 1 at 0 and lease 2 at 1 s (each of rate 50 and burst 50, for 2 s);
// the first agent installs each 1 ms after its grant and admits 4 tokens
// every 100 ms until it is killed at 1.45 s: its last line is an
// admission at 1.402 s, and it never writes that it stopped spending
// lease 2. The second agent starts with the same file 50 ms before the
// coordinator lets it take the region over (lease 3, granted at
// takeover; in the shipped coordinator, once lease 2 has stopped counting
// at 3 s), installs lease 3 1 ms later, admits 4 tokens every 100 ms for
// 1.4 s, returns lease 3 and stops. Correct, whatever the takeover:
// neither agent spends more than its leases allow, and the first spends
// nothing once it is dead.
type killedRun struct {
	coordinator []Event
	first       []Event // the killed agent's part of eu's log
	second      []Event // the restarted agent's part
}

func newKilledRun(takeover int64) *killedRun {
	start := func(at int64) Event {
		return Event{T: at, Kind: Start, Tenant: "t", Rate: 100 * quota.One, Burst: 100 * quota.One, N: 1, Why: "hard"}
	}
	lease := func(at int64, id uint64) Event {
		return Event{T: at, Kind: Lease, Tenant: "t", Region: "eu", ID: id, Epoch: 1, Rate: 50 * quota.One, Burst: 50 * quota.One,
			Activates: at, Expires: at + 2*sec}
	}
	ev := func(at int64, k Kind, id uint64, n int64) Event {
		return Event{T: at, Kind: k, Tenant: "t", Region: "eu", ID: id, N: n}
	}
	r := &killedRun{}
	r.coordinator = []Event{start(0), lease(0, 1), lease(sec, 2),
		{T: sec + 3*ms, Kind: End, Tenant: "t", Region: "eu", ID: 1, Why: "superseded"},
		{T: 3 * sec, Kind: End, Tenant: "t", Region: "eu", ID: 2, Why: "expired"},
		lease(takeover, 3),
		{T: takeover + 1400*ms + ms/2, Kind: End, Tenant: "t", Region: "eu", ID: 3, Why: "returned"}}
	r.first = []Event{start(0), ev(ms, Install, 1, 0), ev(sec+ms, Install, 2, 0), ev(sec+ms, Supersede, 1, 0)}
	for at := 2 * ms; at < 1450*ms; at += 100 * ms {
		r.first = append(r.first, ev(at, Admit, 0, 4))
	}
	r.second = []Event{start(takeover - 50*ms), ev(takeover+ms, Install, 3, 0)}
	for at := takeover + 2*ms; at < takeover+1400*ms; at += 100 * ms {
		r.second = append(r.second, ev(at, Admit, 0, 4))
	}
	r.second = append(r.second, ev(takeover+1400*ms, Return, 3, 0))
	return r
}

// logs are the run's two files, as afloat quota check reads them: the
// coordinator's, and eu's, in which the restarted agent appended its
// start events, lines and stop after the killed one's last line.
func (r *killedRun) logs() []Log {
	file := func(parts ...[]Event) string {
		var b []byte
		for _, p := range parts {
			for _, e := range p {
				b = e.AppendJSON(b)
			}
		}
		stop := Event{T: 6 * sec, Kind: Stop}
		return string(stop.AppendJSON(b))
	}
	return logs("coordinator.jsonl", file(r.coordinator), "region-eu.jsonl", file(r.first, r.second))
}

// TestKilledAgentStopsSpending: an agent killed with kill -9 and restarted
// with the same event log spends nothing after its last line, so the
// correct run passes — a checker that took the killed agent to spend its
// lease on until the next agent's install reported "region eu installed
// lease 3 while still spending under 2" and lease 2 spent past its end.
// Each fault planted across the restart is still caught: admissions of
// both agents together beyond R·Δ + B, the new agent admitting before it
// installed a lease (line by line, and in a count), the new agent
// spending under the dead one's lease, and the dead agent spending its
// lease past its end before it died.
func TestKilledAgentStopsSpending(t *testing.T) {
	for i, tc := range []struct {
		what     string
		takeover int64
		plant    func(r *killedRun)
		want     string // in a message; "" for none
	}{
		{what: "kill -9 and restart, nothing over-admitted", takeover: 3100 * ms},
		{what: "both agents admit 90 at once, 1.7 s apart", takeover: 3100 * ms, plant: func(r *killedRun) {
			r.first = append(r.first, Event{T: 1440 * ms, Kind: Admit, Tenant: "t", Region: "eu", N: 90})
			r.second = append(r.second, Event{T: 3150 * ms, Kind: Admit, Tenant: "t", Region: "eu", N: 90})
		}},
		{what: "both agents admit 90 at once, 110 ms apart (taken over early)", takeover: 1500 * ms, plant: func(r *killedRun) {
			r.first = append(r.first, Event{T: 1440 * ms, Kind: Admit, Tenant: "t", Region: "eu", N: 90})
			r.second = append(r.second, Event{T: 1550 * ms, Kind: Admit, Tenant: "t", Region: "eu", N: 90})
		}, want: "at 1.55s: tenant t: 188 tokens admitted in the window from 1.402s: R·Δ + B is 114.8"},
		{what: "the new agent admits before its install", takeover: 3100 * ms, plant: func(r *killedRun) {
			r.second = append(r.second, Event{T: 3060 * ms, Kind: Admit, Tenant: "t", Region: "eu", N: 4})
		}, want: "at 3.06s: hard mode: region eu admitted 4 without a lease"},
		{what: "the new agent counts admissions from before its install", takeover: 3100 * ms, plant: func(r *killedRun) {
			r.second = append(r.second, Event{T: 3100 * ms, Kind: Counts, Tenant: "t", Region: "eu", Span: 40 * ms, N: 4, Admits: 2})
		}, want: "at 3.1s: hard mode: region eu admitted 4 in the interval from 3.06s without a lease"},
		{what: "the new agent spends under the dead one's lease", takeover: 3100 * ms, plant: func(r *killedRun) {
			r.second[0].T = 2 * sec // it starts while lease 2 still counts
			for at := 2050 * ms; at < 3*sec; at += 100 * ms {
				r.second = append(r.second, Event{T: at, Kind: Admit, Tenant: "t", Region: "eu", N: 1})
			}
			r.second = append(r.second, Event{T: 3 * sec, Kind: Expire, Tenant: "t", Region: "eu", ID: 2})
		}, want: "at 3s: region eu stopped spending under lease 2, which it was not using"},
		{what: "the dead agent spent lease 2 past its end", takeover: 3100 * ms, plant: func(r *killedRun) {
			for j := range r.coordinator {
				if e := &r.coordinator[j]; e.ID == 2 {
					e.Expires = 1300 * ms
					if e.Kind == End {
						e.T = 1300 * ms
					}
				}
			}
		}, want: "region eu spent under lease 2 from 1.001s to 1.402s; it counted only from 1s to 1.3s"},
	} {
		r := newKilledRun(tc.takeover)
		if tc.plant != nil {
			tc.plant(r)
		}
		res, err := CheckLogs(r.logs(), nil)
		if err != nil {
			t.Fatalf("step %d (%s): %v", i, tc.what, err)
		}
		msgs := strings.Join(res.Messages, "\n")
		switch {
		case tc.want == "" && res.Violations != 0:
			t.Errorf("step %d (%s): %d violations:\n%s\nwant none", i, tc.what, res.Violations, msgs)
		case tc.want != "" && !strings.Contains(msgs, tc.want):
			t.Errorf("step %d (%s): %d violations:\n%s\nwant one saying %q", i, tc.what, res.Violations, msgs, tc.want)
		}
		// Merge alone (as servicetest's check reads a cluster's logs)
		// tells the processes apart by their start events, and agrees.
		merged, _ := Merge(slices.Concat(r.coordinator, r.first, r.second))
		if rep := check(merged); rep.Violations != res.Violations {
			t.Errorf("step %d (%s): Merge and a Checker: %d violations %q; CheckLogs %d", i, tc.what, rep.Violations, rep.Messages, res.Violations)
		}
	}
}
