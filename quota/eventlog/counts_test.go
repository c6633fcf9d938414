package eventlog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

// TestCounter: decisions are counted by tenant, region and interval
// (fixed slices of the clock), written when Flush is told their interval
// ended, in the order of interval, tenant and region; other events pass
// at once; a decision logged after its interval's count opens a second
// count of it; FlushAll cuts the open intervals after their last
// decision.
func TestCounter(t *testing.T) {
	var got collected
	c, err := NewCounter(&got, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ms := int64(time.Millisecond)
	dec := func(at int64, kind Kind, tenant, region string, n int64) {
		c.Write(&Event{T: at * ms, Kind: kind, Tenant: tenant, Region: region, N: n})
	}
	dec(1010, Admit, "b", "eu", 3)
	dec(1020, Admit, "a", "eu", 2)
	dec(1030, Reject, "a", "eu", 5)
	dec(1099, Admit, "a", "eu", 1)
	c.Write(&Event{T: 1100 * ms, Kind: Install, Tenant: "a", Region: "eu", ID: 7})
	dec(1100, Admit, "a", "eu", 4) // the next interval
	dec(1150, Reject, "a", "us", 1)
	c.Flush(1099 * ms) // nothing has ended
	if len(got) != 1 || got[0].Kind != Install {
		t.Fatalf("step 1: %v; want only the install", got)
	}
	c.Flush(1100 * ms)
	dec(1090, Admit, "a", "eu", 6) // stamped before 1.1 s, logged after its count
	c.Flush(1250 * ms)
	dec(1260, Admit, "a", "eu", 1)
	c.FlushAll(1270 * ms)
	var lines []string
	for _, e := range got {
		lines = append(lines, strings.TrimSpace(string(e.AppendJSON(nil))))
	}
	want := []string{
		`{"t_ns":1100000000,"ev":"install","tenant":"a","region":"eu","id":7}`,
		`{"t_ns":1100000000,"ev":"counts","tenant":"a","region":"eu","n":3,"span_ns":100000000,"admit_count":2,"reject_count":1,"reject_n":5}`,
		`{"t_ns":1100000000,"ev":"counts","tenant":"b","region":"eu","n":3,"span_ns":100000000,"admit_count":1}`,
		`{"t_ns":1100000000,"ev":"counts","tenant":"a","region":"eu","n":6,"span_ns":100000000,"admit_count":1}`,
		`{"t_ns":1200000000,"ev":"counts","tenant":"a","region":"eu","n":4,"span_ns":100000000,"admit_count":1}`,
		`{"t_ns":1200000000,"ev":"counts","tenant":"a","region":"us","span_ns":100000000,"reject_count":1,"reject_n":1}`,
		`{"t_ns":1270000000,"ev":"counts","tenant":"a","region":"eu","n":1,"span_ns":70000000,"admit_count":1}`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("counted:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for i, e := range got {
		if _, err := ParseEvent(e.AppendJSON(nil)); err != nil {
			t.Errorf("line %d does not read back: %v", i, err)
		}
	}
	for _, every := range []time.Duration{0, 9 * time.Millisecond, 11 * time.Second} {
		if _, err := NewCounter(&got, every); !errors.Is(err, ErrCountInterval) || !strings.Contains(err.Error(), "10ms to 10s") {
			t.Errorf("NewCounter(%v): %v; want %v naming the range", every, err, ErrCountInterval)
		}
	}
}

// countedLog is a hard tenant (R 100, B 50) whose region eu holds a
// lease from 0 and counts its decisions each second: 150 tokens in the
// first (B + R·1 s), then R a second — exactly the bound over every
// window; plus extra tokens in the count ending at 5 s.
func countedLog(extra int64) string {
	var b strings.Builder
	b.WriteString(`{"t_ns":0,"ev":"start","tenant":"t","rate":100,"burst":50,"n":1,"why":"hard"}` + "\n")
	b.WriteString(`{"t_ns":1,"ev":"lease","tenant":"t","region":"eu","id":1,"epoch":1,"rate":100,"burst":50,"activates_ns":1,"expires_ns":20000000000}` + "\n")
	b.WriteString(`{"t_ns":2,"ev":"install","tenant":"t","region":"eu","id":1}` + "\n")
	for sec := int64(1); sec <= 10; sec++ {
		n := int64(100)
		if sec == 1 {
			n = 150
		}
		if sec == 5 {
			n += extra
		}
		e := Event{T: sec * int64(time.Second), Kind: Counts, Tenant: "t", Region: "eu", N: n, Admits: n, Rejects: 1, Rejected: 2, Span: int64(time.Second)}
		b.Write(e.AppendJSON(nil))
	}
	b.WriteString(`{"t_ns":10000000001,"ev":"stop"}` + "\n")
	return b.String()
}

// TestCheckCounts: a counted log at the bound passes, with the slack it
// used stated; one token more in any count is a violation, and certain:
// the tokens of the counts ending from 1 s to 5 s were all admitted from
// 0 to 5 s, 551 of them, over that window's R·Δ + B of 550. A count of
// admissions by a region with no lease at any time of its interval is
// one without a lease; one whose interval saw the lease end is not.
func TestCheckCounts(t *testing.T) {
	res, err := CheckLogs(logs("at-bound.jsonl", countedLog(0)), nil)
	if err != nil || res.Violations != 0 {
		t.Fatalf("at the bound: %+v, %v; want a pass", res, err)
	}
	if res.Counts != 10 || res.CountInterval != int64(time.Second) || res.Slack != 100 || res.WorstExcess != 100 ||
		res.Admitted != 1050 || res.Rejected != 20 || !strings.Contains(res.Counted, "slack 100 tokens") || !strings.Contains(res.Counted, "2·R·1s (200 tokens)") {
		t.Fatalf("at the bound: %+v", res)
	}
	res, err = CheckLogs(logs("over.jsonl", countedLog(1)), nil)
	if err != nil || res.Violations == 0 || !strings.Contains(res.Messages[0], "551 tokens admitted in the window from 1s: R·Δ + B is 450 (allowed excess 100)") {
		t.Fatalf("one token over: %+v, %v; want a violation", res, err)
	}

	noLease := `{"t_ns":0,"ev":"start","tenant":"t","rate":100,"burst":50,"n":1,"why":"hard"}
{"t_ns":1,"ev":"lease","tenant":"t","region":"eu","id":1,"epoch":1,"rate":100,"burst":50,"activates_ns":1,"expires_ns":1500000000}
{"t_ns":2,"ev":"install","tenant":"t","region":"eu","id":1}
{"t_ns":1500000000,"ev":"expire","tenant":"t","region":"eu","id":1}
{"t_ns":2000000000,"ev":"counts","tenant":"t","region":"eu","n":10,"span_ns":1000000000,"admit_count":10}
{"t_ns":3000000000,"ev":"counts","tenant":"t","region":"eu","n":10,"span_ns":1000000000,"admit_count":10}
{"t_ns":3000000001,"ev":"stop"}
`
	res, err = CheckLogs(logs("no-lease.jsonl", noLease), nil)
	if err != nil || res.Violations != 1 || res.NoLeaseAdmitted != 10 || !strings.Contains(res.Messages[0], "at 3s: hard mode: region eu admitted 10 in the interval from 2s without a lease") {
		t.Fatalf("no lease: %+v, %v; want one violation, the count ending at 3 s", res, err)
	}
}

// TestCountsAgainstExact: on random logs of admissions, checked line by
// line (the exact check) and counted (Counter, intervals of 100 ms to
// 1 s), a violation the counted check reports is one the exact check
// finds, and a counted pass bounds the exact worst excess by twice the
// slack: what Checker promises of counts, against the reference.
func TestCountsAgainstExact(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 4))
	const rate, burst = 100, 50
	start := Event{Kind: Start, Tenant: "t", Rate: rate * quota.One, Burst: burst * quota.One, N: 2, Why: "best-effort"}
	flagged, passed := 0, 0
	for n := range 400 {
		every := time.Duration(1+r.IntN(10)) * 100 * time.Millisecond
		exact := NewChecker()
		var lines collected
		counter, err := NewCounter(&lines, every)
		if err != nil {
			t.Fatal(err)
		}
		exact.Write(&start)
		at := int64(0)
		// Admissions at a random pace around R: some runs stay within
		// the bound, some go over it by little or by much.
		pace := rate * (0.6 + 0.8*r.Float64())
		for range 50 + r.IntN(300) {
			k := int64(1 + r.IntN(5))
			at += int64(float64(k) / pace * 1e9 * 2 * r.Float64())
			e := Event{T: at, Kind: Admit, Tenant: "t", Region: []string{"eu", "us"}[r.IntN(2)], N: k}
			exact.Write(&e)
			counter.Write(&e)
		}
		counter.FlushAll(at + 1)
		want := exact.Finish(at + 1)
		events, _ := Merge(append([]Event{start}, lines...))
		counted := NewChecker()
		for i := range events {
			counted.Write(&events[i])
		}
		got := counted.Finish(events[len(events)-1].T)
		if got.Slack != rate*time.Duration(got.CountInterval).Seconds() || got.Admitted != want.Admitted {
			t.Fatalf("case %d: slack %v over %v, admitted %d (exactly: %d)", n, got.Slack, time.Duration(got.CountInterval), got.Admitted, want.Admitted)
		}
		switch {
		case got.Violations > 0 && want.Violations == 0:
			t.Fatalf("case %d (%v): the counted check found %d violations (%v), the exact one none (worst %v)", n, every, got.Violations, got.Messages, want.WorstExcess)
		case got.Violations == 0 && want.WorstExcess > 2*got.Slack+1e-6:
			t.Fatalf("case %d (%v): the counted check passed with slack %v; the exact worst excess is %v", n, every, got.Slack, want.WorstExcess)
		case got.Violations > 0:
			flagged++
		default:
			passed++
		}
	}
	if flagged < 50 || passed < 50 {
		t.Fatalf("%d runs flagged, %d passed: the cases do not test both sides", flagged, passed)
	}
}

// FuzzParseCounts: no line panics the decoder; a counts event it reads
// is one a Counter could write — an interval of 1 ns to MaxCountSpan,
// tallies that decisions of a token or more can carry, at least one
// decision — and writes back to an equal event.
func FuzzParseCounts(f *testing.F) {
	for _, e := range []Event{
		{T: 1_700_000_001_000_000_000, Kind: Counts, Tenant: "acme", Region: "eu", N: 1234, Span: int64(time.Second), Admits: 1000, Rejects: 12, Rejected: 50},
		{T: 100, Kind: Counts, Tenant: "t", Region: "eu", Span: 100, Rejects: 1, Rejected: 1},
	} {
		f.Add(e.AppendJSON(nil))
	}
	f.Add([]byte(`{"t_ns":5,"ev":"counts","tenant":"t","region":"eu","n":3,"span_ns":10,"admit_count":4}`))
	f.Add([]byte(`{"t_ns":5,"ev":"counts","tenant":"t","region":"eu","span_ns":10}`))
	f.Add([]byte(`{"t_ns":-9223372036854775808,"ev":"counts","n":1,"span_ns":10,"admit_count":1}`))
	f.Add([]byte(`{"t_ns":5,"ev":"counts","n":1,"span_ns":60000000001,"admit_count":1}`))
	f.Add([]byte(`{"t_ns":5,"ev":"counts","n":1e3,"span_ns":1,"admit_count":1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseEvent(line)
		if err != nil || e.Kind != Counts {
			return
		}
		switch {
		case e.Span < 1 || e.Span > int64(MaxCountSpan) || e.T-e.Span > e.T:
			t.Fatalf("%q: read an interval of %d ns ending at %d", line, e.Span, e.T)
		case e.Admits < 0 || e.Rejects < 0 || e.Admits+e.Rejects < 1:
			t.Fatalf("%q: read %d admitted and %d refused decisions", line, e.Admits, e.Rejects)
		case e.N < e.Admits || e.Rejected < e.Rejects || (e.Admits == 0) != (e.N == 0) || (e.Rejects == 0) != (e.Rejected == 0):
			t.Fatalf("%q: read %d tokens of %d admissions, %d of %d refusals", line, e.N, e.Admits, e.Rejected, e.Rejects)
		case float64(e.N) > 1e15 || float64(e.Rejected) > 1e15:
			t.Fatalf("%q: read tallies beyond 1e15", line)
		}
		back, err := ParseEvent(e.AppendJSON(nil))
		if err != nil {
			t.Fatalf("re-reading %q: %v", e.AppendJSON(nil), err)
		}
		if fmt.Sprint(back) != fmt.Sprint(e) {
			t.Fatalf("round trip: %+v, then %+v", e, back)
		}
	})
}
