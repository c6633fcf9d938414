package eventlog

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/afloat/afloat/quota"
)

// Two processes' logs of one run, as a cluster writes them: the
// coordinator's (the tenants it serves, its grants) and a region's (the
// tenants it serves, what it installed and admitted).
const (
	coordLog = `{"t_ns":0,"ev":"start","tenant":"acme","rate":500,"burst":6000,"n":3,"why":"hard"}
{"t_ns":0,"ev":"start","tenant":"globex","rate":50,"burst":200,"n":2,"balance":20,"why":"best-effort"}
{"t_ns":1000,"ev":"lease","tenant":"acme","region":"eu","id":1,"epoch":1,"rate":100,"burst":1000,"activates_ns":1000,"expires_ns":10000000000}
{"t_ns":1000,"ev":"lease","tenant":"globex","region":"eu","id":2,"epoch":1,"rate":10,"burst":50,"activates_ns":1000,"expires_ns":10000000000}
{"t_ns":9000000000,"ev":"stop"}
`
	regionLog = `{"t_ns":0,"ev":"start","tenant":"acme","rate":500,"burst":6000,"n":3,"why":"hard"}
{"t_ns":0,"ev":"start","tenant":"globex","rate":50,"burst":200,"n":2,"balance":20,"why":"best-effort"}
{"t_ns":2000,"ev":"install","tenant":"acme","region":"eu","id":1}
{"t_ns":2000,"ev":"install","tenant":"globex","region":"eu","id":2}
{"t_ns":3000,"ev":"admit","tenant":"acme","region":"eu","n":900}
{"t_ns":3000,"ev":"admit","tenant":"globex","region":"eu","n":40}
{"t_ns":8000000000,"ev":"stop"}
`
)

func logs(named ...string) []Log {
	var out []Log
	for i := 0; i < len(named); i += 2 {
		out = append(out, Log{Name: named[i], R: strings.NewReader(named[i+1])})
	}
	return out
}

func mustLimits(t *testing.T, specs ...string) []Limits {
	t.Helper()
	var out []Limits
	for _, s := range specs {
		l, err := ParseLimits(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// TestCheckLogsProvesOrFails: a set of logs that states no tenant, admits
// nothing, holds an event of an unknown kind or a cut last line, or states
// limits other than the ones given is refused with the file (and the line
// where there is one); a whole run is checked, its tenants listed as
// verified when their limits were given and unverified when they come
// from the log alone.
func TestCheckLogsProvesOrFails(t *testing.T) {
	forged := strings.Replace(regionLog, `"rate":500,"burst":6000`, `"rate":500000,"burst":6000`, 1)
	for i, tc := range []struct {
		logs       []Log
		limits     []string
		want       error    // nil: checked
		msg        []string // in the error
		verified   []string
		unverified []string
	}{
		{logs: logs("c.jsonl", coordLog, "r.jsonl", regionLog), unverified: []string{"acme", "globex"}},
		{logs: logs("c.jsonl", coordLog, "r.jsonl", regionLog), limits: []string{"acme:500:6000", "globex:50:200:20:2"}, verified: []string{"acme", "globex"}},
		// A log of a stop line alone; of a start and a stop; of a coordinator alone.
		{logs: logs("stop.jsonl", `{"t_ns":1,"ev":"stop"}`+"\n"), want: ErrNoStart, msg: []string{"in stop.jsonl", "no tenant's R and B"}},
		{logs: logs("idle.jsonl", `{"t_ns":0,"ev":"start","tenant":"acme","rate":5,"burst":6,"n":1,"why":"hard"}`+"\n"+`{"t_ns":1,"ev":"stop"}`+"\n"), want: ErrNoAdmissions, msg: []string{"in idle.jsonl"}},
		{logs: logs("c.jsonl", coordLog), want: ErrNoAdmissions, msg: []string{"in c.jsonl"}},
		// An event of a kind no component writes; a last line without its newline.
		{logs: logs("c.jsonl", coordLog, "r.jsonl", strings.Replace(regionLog, `"ev":"admit","tenant":"globex"`, `"ev":"admitted","tenant":"globex"`, 1)),
			want: ErrUnknownEvent, msg: []string{"r.jsonl: line 6:", `"admitted"`}},
		{logs: logs("c.jsonl", strings.TrimSuffix(coordLog, "\n"), "r.jsonl", regionLog), want: ErrTruncated, msg: []string{"c.jsonl: ", "line 5 is cut off"}},
		// Limits given: another R than the log's; another mode; another E;
		// a tenant given that the logs do not hold; a tenant they hold that
		// was not given.
		{logs: logs("c.jsonl", coordLog, "r.jsonl", regionLog), limits: []string{"acme:400:6000", "globex:50:200:20:2"},
			want: ErrLimitsMismatch, msg: []string{"c.jsonl: line 1:", `tenant "acme"`, "given R 400, B 6000, hard (acme:400:6000)", "the log's start event says R 500, B 6000, hard"}},
		{logs: logs("c.jsonl", coordLog, "r.jsonl", regionLog), limits: []string{"acme:500:6000", "globex:50:200"},
			want: ErrLimitsMismatch, msg: []string{"c.jsonl: line 2:", `tenant "globex"`, "given R 50, B 200, hard", "R 50, B 200, best-effort, E 20, 2 regions"}},
		{logs: logs("c.jsonl", coordLog, "r.jsonl", regionLog), limits: []string{"acme:500:6000", "globex:50:200:10:2"},
			want: ErrLimitsMismatch, msg: []string{"E 10, 2 regions", "E 20, 2 regions"}},
		{logs: logs("c.jsonl", coordLog, "r.jsonl", regionLog), limits: []string{"acme:500:6000", "globex:50:200:20:3"},
			want: ErrLimitsMismatch, msg: []string{"E 20, 3 regions", "E 20, 2 regions"}},
		{logs: logs("c.jsonl", coordLog, "r.jsonl", regionLog), limits: []string{"acme:500:6000", "globex:50:200:20:2", "initech:1:1"},
			want: ErrNoStart, msg: []string{`tenant "initech"`, "in c.jsonl, r.jsonl"}},
		{logs: logs("c.jsonl", coordLog, "r.jsonl", regionLog), limits: []string{"acme:500:6000"},
			want: ErrLimitsMissing, msg: []string{`tenant "globex"`, "give every tenant's limits, or none"}},
		// A region's log that raises its own R: the coordinator's log
		// says 500; given 500, the region's line is the one refused.
		{logs: logs("c.jsonl", coordLog, "r.jsonl", forged), limits: []string{"acme:500:6000", "globex:50:200:20:2"},
			want: ErrLimitsMismatch, msg: []string{"r.jsonl: line 1:", "the log's start event says R 500000, B 6000"}},
		// A tenant event (an operator's change) states limits too.
		{logs: logs("c.jsonl", coordLog+`{"t_ns":9000000001,"ev":"tenant","tenant":"acme","rate":900,"burst":6000,"n":3,"mode":"hard","why":"update","by":"alice"}`+"\n", "r.jsonl", regionLog),
			limits: []string{"acme:500:6000", "globex:50:200:20:2"}, want: ErrLimitsMismatch, msg: []string{"c.jsonl: line 6:", "the log's tenant event says R 900"}},
	} {
		res, err := CheckLogs(tc.logs, mustLimits(t, tc.limits...))
		if tc.want == nil {
			if err != nil || res.Violations != 0 || fmt.Sprint(res.Verified) != fmt.Sprint(tc.verified) || fmt.Sprint(res.Unverified) != fmt.Sprint(tc.unverified) {
				t.Errorf("step %d: CheckLogs = %+v, %v; want 0 violations, verified %v, unverified %v", i, res, err, tc.verified, tc.unverified)
			}
			if err == nil && res.Admitted != 940 {
				t.Errorf("step %d: admitted %d, want 940 (both logs read)", i, res.Admitted)
			}
			continue
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("step %d: CheckLogs = %v, want %v", i, err, tc.want)
			continue
		}
		// Every refusal but a line that is no event means the check failed.
		if unproven := errors.Is(err, ErrUnproven); unproven != (tc.want != ErrUnknownEvent) {
			t.Errorf("step %d: errors.Is(%v, ErrUnproven) = %v", i, err, unproven)
		}
		for _, m := range tc.msg {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("step %d: %v\ndoes not say %q", i, err, m)
			}
		}
	}
	_, err := CheckLogs(logs("c.jsonl", coordLog, "r.jsonl", regionLog), mustLimits(t, "acme:500:6000", "acme:500:6000"))
	if !errors.Is(err, ErrBadLimits) || errors.Is(err, ErrUnproven) || !strings.Contains(err.Error(), `tenant "acme" given twice`) {
		t.Errorf("a tenant given twice: %v, want %v, not %v", err, ErrBadLimits, ErrUnproven)
	}
}

// TestParseLimits: each field in its range, named when it is not.
func TestParseLimits(t *testing.T) {
	for i, tc := range []struct {
		in   string
		want Limits
		err  string
	}{
		{in: "acme:500:6000", want: Limits{Tenant: "acme", Rate: 500 * quota.One, Burst: 6000 * quota.One}},
		{in: "acme:0.000001:0", want: Limits{Tenant: "acme", Rate: 1}},
		{in: "globex:50:200:20:2", want: Limits{Tenant: "globex", Rate: 50 * quota.One, Burst: 200 * quota.One, Mode: quota.BestEffort, Emergency: 20 * quota.One, Regions: 2}},
		{in: "globex:50.5:200:0:64", want: Limits{Tenant: "globex", Rate: 50_500_000, Burst: 200 * quota.One, Mode: quota.BestEffort, Regions: 64}},
		{in: "acme", err: "want NAME:R:B (hard mode) or NAME:R:B:E:N"},
		{in: "acme:1:2:3", err: "want NAME:R:B"},
		{in: "acme:1:2:3:4:5", err: "want NAME:R:B"},
		{in: ":1:2", err: `NAME "": want 1 to 128 bytes`},
		{in: strings.Repeat("x", 129) + ":1:2", err: "NAME"},
		{in: "acme:0:2", err: `R "0": want tokens a second, above 0 and at most 1e9`},
		{in: "acme:-1:2", err: `R "-1"`},
		{in: "acme:1e3:2", err: `R "1e3"`},
		{in: "acme:1000000001:2", err: `R "1000000001"`},
		{in: "acme:0.0000001:2", err: `R "0.0000001"`},
		{in: "acme:1:-2", err: `B "-2": want tokens, 0 to 1e12`},
		{in: "acme:1:", err: `B ""`},
		{in: "acme:1:2:3:1", err: `E "3": want tokens each region may spend beyond its lease, 0 to B`},
		{in: "acme:1:2:1:0", err: `N "0": want the number of regions, 1 to 64`},
		{in: "acme:1:2:1:65", err: `N "65"`},
		{in: "acme:1:2:1:+3", err: `N "+3"`},
		{in: "acme:1:2:1:03", err: `N "03"`},
	} {
		got, err := ParseLimits(tc.in)
		if tc.err != "" {
			if !errors.Is(err, ErrBadLimits) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("step %d: ParseLimits(%q) = %+v, %v; want %v mentioning %q", i, tc.in, got, err, ErrBadLimits, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("step %d: ParseLimits(%q) = %+v, %v; want %+v", i, tc.in, got, err, tc.want)
		}
		if back, err := ParseLimits(got.String()); err != nil || back != got {
			t.Errorf("step %d: ParseLimits(%q) = %+v, %v; want %+v", i, got.String(), back, err, got)
		}
	}
}

// FuzzParseLimits: no input panics the parser; what it reads is in range
// and writes back to the same limits.
func FuzzParseLimits(f *testing.F) {
	for _, s := range []string{"acme:500:6000", "globex:50:200:20:2", "a:0.000001:999999999999.999999", "a:1:2:3", "a:1e9:2", "::", "a:1:2:1:-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLimits(s)
		if err != nil {
			return
		}
		if l.Tenant == "" || strings.Contains(l.Tenant, ":") || l.Rate <= 0 || l.Rate > 1e9*quota.One || l.Burst < 0 || l.Burst > 1e12*quota.One ||
			(l.Mode == quota.Hard && (l.Emergency != 0 || l.Regions != 0)) ||
			(l.Mode == quota.BestEffort && (l.Emergency < 0 || l.Emergency > l.Burst || l.Regions < 1 || l.Regions > 64)) {
			t.Fatalf("ParseLimits(%q) = %+v: out of range", s, l)
		}
		back, err := ParseLimits(l.String())
		if err != nil || back != l {
			t.Fatalf("ParseLimits(%q) = %+v, written %q, read back %+v, %v", s, l, l.String(), back, err)
		}
	})
}

// FuzzCheckLogs: no log panics the check, and one it checks is whole — it
// ends with a newline and holds a stop, a tenant's limits and an
// admission — and, with limits given, matches them.
func FuzzCheckLogs(f *testing.F) {
	f.Add([]byte(coordLog+regionLog), "")
	f.Add([]byte(regionLog), "acme:500:6000")
	f.Add([]byte(`{"t_ns":1,"ev":"stop"}`+"\n"), "")
	f.Add([]byte(strings.TrimSuffix(regionLog, "\n")), "")
	f.Add([]byte(strings.Replace(regionLog, `"admit"`, `"admitted"`, 1)), "")
	f.Fuzz(func(t *testing.T, log []byte, limits string) {
		var given []Limits
		if limits != "" {
			l, err := ParseLimits(limits)
			if err != nil {
				return
			}
			given = append(given, l)
		}
		res, err := CheckLogs(logs("fuzz.jsonl", string(log)), given)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.jsonl: ") && !errors.Is(err, ErrLimitsMissing) && !errors.Is(err, ErrNoStart) && !errors.Is(err, ErrNoAdmissions) {
				t.Fatalf("error %q does not name the log", err)
			}
			return
		}
		if i := bytes.LastIndexFunc(log, func(r rune) bool { return !unicode.IsSpace(r) }); i >= 0 && bytes.IndexByte(log[i:], '\n') < 0 {
			t.Fatalf("checked a log whose last line has no newline: %q", log)
		}
		var stops, starts, admits int
		for line := range strings.Lines(string(log)) {
			e, err := ParseEvent([]byte(line))
			if err != nil {
				continue
			}
			switch e.Kind {
			case Stop:
				stops++
			case Start, Tenant:
				starts++
				if len(given) > 0 && e.Tenant == given[0].Tenant {
					if err := given[0].match(&e); err != nil {
						t.Fatalf("checked a log against %v with a line that differs: %v", given[0], err)
					}
				}
			case Admit:
				admits++
			}
		}
		if stops == 0 || starts == 0 || admits == 0 {
			t.Fatalf("checked a log with %d stop, %d start and %d admit events: %+v", stops, starts, admits, res)
		}
	})
}

// TestLimitsFlag: each --tenant adds one tenant's limits; a bad one is
// refused and adds nothing.
func TestLimitsFlag(t *testing.T) {
	var f LimitsFlag
	for _, v := range []string{"acme:500:6000", "beta:1.5:0:0:3"} {
		if err := f.Set(v); err != nil {
			t.Fatalf("Set(%q): %v", v, err)
		}
	}
	if err := f.Set("gamma:0:1"); !errors.Is(err, ErrBadLimits) || len(f) != 2 {
		t.Errorf("Set(gamma:0:1): %v, %d limits; want ErrBadLimits and 2", err, len(f))
	}
	if got := f.String(); got != "acme:500:6000,beta:1.5:0:0:3" {
		t.Errorf("String() = %q", got)
	}
}
