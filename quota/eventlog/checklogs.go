package eventlog

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/afloat/afloat/quota"
)

// Errors of CheckLogs for a run that proves nothing, or not what its
// checker was told. Like ErrNoEvents and ErrTruncated, each means the
// check failed, not that the input was malformed: each matches
// ErrUnproven.
var (
	// ErrNoStart: no start or tenant event, so no tenant's R and B — or
	// none for a tenant whose limits were given.
	ErrNoStart error = &unprovenError{"eventlog: log has no start event"}
	// ErrNoAdmissions: nothing was admitted, so no bound was put to the
	// test.
	ErrNoAdmissions error = &unprovenError{"eventlog: log has no admissions"}
	// ErrLimitsMismatch: the log states limits for a tenant other than the
	// ones given for it.
	ErrLimitsMismatch error = &unprovenError{"eventlog: the log's limits differ from the ones given"}
	// ErrLimitsMissing: limits were given for some tenants but not for one
	// the log holds.
	ErrLimitsMissing error = &unprovenError{"eventlog: limits not given"}
)

// ErrBadLimits: limits that do not parse or are out of range, or a tenant
// given twice.
var ErrBadLimits = errors.New("eventlog: bad limits")

// Limits are a tenant's limits as its operator knows them, to check a log
// against (afloat quota check --tenant): R and B, the mode, and in
// best-effort mode E per region and the number of regions — everything
// the bound R·Δ + B (+ regions·E) depends on.
type Limits struct {
	Tenant    string
	Rate      quota.Micro // R, tokens a second
	Burst     quota.Micro // B, tokens
	Mode      quota.Mode
	Emergency quota.Micro // E, best-effort only
	Regions   int         // best-effort only
}

// ParseLimits reads NAME:R:B (hard mode) or NAME:R:B:E:N (best-effort:
// E tokens per region, N regions). Amounts are decimal tokens with at
// most six decimals, in the ranges a tenant's configuration allows: R
// above 0 up to 1e9, B 0 to 1e12, E 0 to B, N 1 to 64; NAME is 1 to 128
// bytes without a colon.
func ParseLimits(s string) (Limits, error) {
	f := strings.Split(s, ":")
	if len(f) != 3 && len(f) != 5 {
		return Limits{}, fmt.Errorf("%w: %q: want NAME:R:B (hard mode) or NAME:R:B:E:N (best-effort: E per region, N regions)", ErrBadLimits, s)
	}
	bad := func(field, v, want string) error {
		return fmt.Errorf("%w: %q: %s %q: want %s", ErrBadLimits, s, field, v, want)
	}
	l := Limits{Tenant: f[0]}
	if l.Tenant == "" || len(l.Tenant) > 128 {
		return Limits{}, bad("NAME", f[0], "1 to 128 bytes")
	}
	var err error
	if l.Rate, err = parseMicro(f[1]); err != nil || l.Rate <= 0 || l.Rate > 1e9*quota.One {
		return Limits{}, bad("R", f[1], "tokens a second, above 0 and at most 1e9, with at most six decimals")
	}
	if l.Burst, err = parseMicro(f[2]); err != nil || l.Burst < 0 || l.Burst > 1e12*quota.One {
		return Limits{}, bad("B", f[2], "tokens, 0 to 1e12, with at most six decimals")
	}
	if len(f) == 3 {
		return l, nil
	}
	l.Mode = quota.BestEffort
	if l.Emergency, err = parseMicro(f[3]); err != nil || l.Emergency < 0 || l.Emergency > l.Burst {
		return Limits{}, bad("E", f[3], "tokens each region may spend beyond its lease, 0 to B, with at most six decimals")
	}
	n, err := strconv.Atoi(f[4])
	if err != nil || n < 1 || n > 64 || strconv.Itoa(n) != f[4] {
		return Limits{}, bad("N", f[4], "the number of regions, 1 to 64")
	}
	l.Regions = n
	return l, nil
}

// String writes the limits as ParseLimits reads them.
func (l Limits) String() string {
	s := l.Tenant + ":" + formatMicro(l.Rate) + ":" + formatMicro(l.Burst)
	if l.Mode == quota.BestEffort {
		s += ":" + formatMicro(l.Emergency) + ":" + strconv.Itoa(l.Regions)
	}
	return s
}

// LimitsFlag is a repeatable flag (flag.Value) of limits, as afloat
// quota check's --tenant NAME:R:B: each use adds one tenant's, read by
// ParseLimits. CheckLogs refuses a tenant given twice.
type LimitsFlag []Limits

func (f *LimitsFlag) String() string {
	s := make([]string, len(*f))
	for i, l := range *f {
		s[i] = l.String()
	}
	return strings.Join(s, ",")
}

// Set adds the limits v gives.
func (f *LimitsFlag) Set(v string) error {
	l, err := ParseLimits(v)
	if err != nil {
		return err
	}
	*f = append(*f, l)
	return nil
}

// describe says what the limits are, in words.
func (l Limits) describe() string {
	s := fmt.Sprintf("R %s, B %s, %v", formatMicro(l.Rate), formatMicro(l.Burst), l.Mode)
	if l.Mode == quota.BestEffort {
		s += fmt.Sprintf(", E %s, %d regions", formatMicro(l.Emergency), l.Regions)
	}
	return s
}

// formatMicro writes an amount exactly, in decimal tokens (Micro.String
// goes through a float64, which is exact only up to about 1e9 tokens).
func formatMicro(m quota.Micro) string {
	sign := ""
	u := uint64(m)
	if m < 0 {
		sign, u = "-", uint64(-m)
	}
	whole, frac := u/uint64(quota.One), u%uint64(quota.One)
	if frac == 0 {
		return sign + strconv.FormatUint(whole, 10)
	}
	return sign + strconv.FormatUint(whole, 10) + "." + strings.TrimRight(fmt.Sprintf("%06d", frac), "0")
}

// logLimits are the limits a start or tenant event states.
func logLimits(e *Event) Limits {
	l := Limits{Tenant: e.Tenant, Rate: e.Rate, Burst: e.Burst, Regions: int(e.N)}
	mode := e.Why
	if e.Kind == Tenant {
		mode = e.Mode
	}
	m, err := quota.ParseMode(mode)
	if err != nil {
		m = -1 // matches no given mode
	}
	l.Mode = m
	if m == quota.BestEffort {
		l.Emergency = e.Balance
	}
	return l
}

// match says whether the event states these limits: R and B, the mode,
// and in best-effort mode E and the number of regions (the regions of a
// hard tenant do not change its bound).
func (l Limits) match(e *Event) error {
	got := logLimits(e)
	same := got.Rate == l.Rate && got.Burst == l.Burst && got.Mode == l.Mode
	if same && l.Mode == quota.BestEffort {
		same = got.Emergency == l.Emergency && got.Regions == l.Regions
	}
	if same {
		return nil
	}
	logged := got.describe()
	if got.Mode < 0 {
		logged = fmt.Sprintf("R %s, B %s, mode %q", formatMicro(got.Rate), formatMicro(got.Burst), e.Why+e.Mode)
	}
	return fmt.Errorf("%w: tenant %q: given %s (%s); the log's %v event says %s", ErrLimitsMismatch, l.Tenant, l.describe(), l, e.Kind, logged)
}

// A Log is one event log for CheckLogs: its name (a file's, for errors)
// and its content.
type Log struct {
	Name string
	R    io.Reader
}

// CheckResult is what CheckLogs found: the checker's report, and where
// each tenant's limits came from.
type CheckResult struct {
	Report
	// Verified are the tenants whose limits were given, each matching
	// every start and tenant event of the log; Unverified, when no limits
	// were given, every tenant, whose limits come from the log alone.
	Verified   []string `json:"verified,omitempty"`
	Unverified []string `json:"unverified,omitempty"`
	// Skew lists the corrections Merge made to processes' clocks to put
	// every grant before its install (and every end of use before the
	// coordinator's end it caused): the logs' clocks disagreed by that
	// much, and the bound was checked on the corrected times.
	Skew []ClockShift `json:"skew_corrected,omitempty"`
	// Counted says, when the logs held counts (a region's decisions over
	// intervals rather than a line each), what the check of them proves:
	// the slack it allowed and the bound a pass proves (Checker).
	Counted string `json:"counted,omitempty"`
}

// CheckLogs checks a run from its event logs — one, or the logs of a
// cluster's processes, merged by time — and proves something or fails:
//
//   - each log must be whole (ReadLog: events, a stop, every line ending
//     in a newline, every line an event of a known kind);
//   - the run must state some tenant's limits (a start or tenant event,
//     else ErrNoStart) and admit something (else ErrNoAdmissions): a run
//     that admits nothing puts no bound to the test;
//   - with limits given, every start and tenant event of a tenant given
//     must state exactly them (else ErrLimitsMismatch, naming the log,
//     the line, both limits), every tenant given must appear (else
//     ErrNoStart), and every tenant the logs hold must be given (else
//     ErrLimitsMissing): a log cannot raise its own bound. A run in which
//     an operator changed a tenant's limits is checked without them.
//   - the logs are merged by cause as well as time (Merge): a region
//     process's clock that disagrees with the coordinator's is corrected,
//     and the result says by how much (ClockShift). Each log, and each
//     process's part of a log it appends to, is a clock of its own.
//   - a process spends nothing after its last event (Merge): a process's
//     part of a log runs from its start events to the next process's, so
//     an agent killed (kill -9) and restarted with the same log stops
//     spending its leases at its last line.
//   - Without limits, the checker holds each tenant to the limits its own
//     log states, and the result lists every tenant as Unverified.
//
// Errors name the log and the line. The Report counts the violations.
func CheckLogs(logs []Log, given []Limits) (CheckResult, error) {
	if len(logs) == 0 {
		return CheckResult{}, ErrNoEvents
	}
	want := map[string]Limits{}
	for _, l := range given {
		if _, dup := want[l.Tenant]; dup {
			return CheckResult{}, fmt.Errorf("%w: tenant %q given twice", ErrBadLimits, l.Tenant)
		}
		want[l.Tenant] = l
	}
	var (
		events  []Event
		stated  = map[string]bool{} // tenants with a start or tenant event
		admits  int
		end     int64
		names   []string
		checked = func() string { return strings.Join(names, ", ") }
	)
	var logStarts []int // where each log's events begin: a process's clock at least
	for _, l := range logs {
		names = append(names, l.Name)
		logStarts = append(logStarts, len(events))
		err := readLog(l.R, func(_ int, e *Event) error {
			switch e.Kind {
			case Summary:
				return nil // chaos's last line on standard output, not an event
			case Start, Tenant:
				stated[e.Tenant] = true
				if lim, ok := want[e.Tenant]; ok {
					if err := lim.match(e); err != nil {
						return err
					}
				}
			case Admit:
				admits++
			case Counts:
				if e.N > 0 {
					admits++
				}
			}
			end = max(end, e.T)
			events = append(events, *e)
			return nil
		})
		if err != nil {
			return CheckResult{}, fmt.Errorf("%s: %w", l.Name, err)
		}
	}
	if len(stated) == 0 {
		return CheckResult{}, fmt.Errorf("%w in %s: no tenant's R and B to check admissions against", ErrNoStart, checked())
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if !stated[name] {
			return CheckResult{}, fmt.Errorf("%w for tenant %q (its limits were given) in %s", ErrNoStart, name, checked())
		}
	}
	tenants := slices.Sorted(maps.Keys(stated))
	if len(want) > 0 {
		for _, name := range tenants {
			if _, ok := want[name]; !ok {
				return CheckResult{}, fmt.Errorf("%w for tenant %q, which %s holds: give every tenant's limits, or none", ErrLimitsMissing, name, checked())
			}
		}
	}
	if admits == 0 {
		return CheckResult{}, fmt.Errorf("%w in %s: no bound was put to the test", ErrNoAdmissions, checked())
	}
	chk := NewChecker()
	merged, skew := mergeClocks(events, logStarts)
	for i := range merged {
		chk.Write(&merged[i])
		end = max(end, merged[i].T)
	}
	res := CheckResult{Report: chk.Finish(end), Skew: skew}
	if res.Counts > 0 {
		res.Counted = countedVerdict(res.Report)
	}
	if len(want) > 0 {
		res.Verified = tenants
	} else {
		res.Unverified = tenants
	}
	return res, nil
}

// countedVerdict says what a check of counts proves (Checker).
func countedVerdict(r Report) string {
	i := time.Duration(r.CountInterval)
	return fmt.Sprintf("%d counts of decisions over intervals of up to %v, each taken whole in every window holding its end: "+
		"windows checked against R·Δ + B + R·%v (slack %.6g tokens, R the largest rate); a violation found is certain, "+
		"and a pass proves every window within R·Δ + B + 2·R·%v (%.6g tokens)",
		r.Counts, i, i, r.Slack, i, 2*r.Slack)
}
