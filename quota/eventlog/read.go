package eventlog

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"time"

	"github.com/afloat/afloat/quota"
)

// Errors of ReadLog for a log that ends before its run did. A checker fed
// such a log has seen only part of a run: its report would pass what it
// never saw.
var (
	// ErrNoEvents: the log holds no event — an empty file, blank lines,
	// or a summary line alone.
	ErrNoEvents error = &unprovenError{"eventlog: log has no events"}
	// ErrTruncated: the log stops before the end of its run — no stop
	// event, or a last line cut off before its newline.
	ErrTruncated error = &unprovenError{"eventlog: log is truncated"}
	// ErrPartsMissing: a rotated log (OpenLog) lacks parts: its oldest
	// were deleted (Rotated's keep), or one between is gone. The run's
	// beginning — its tenants' limits, the leases in force — is not in
	// what is left, and nothing can be proven from the rest.
	ErrPartsMissing error = &unprovenError{"eventlog: parts of the log are missing"}
	// ErrUnknownEvent: a line names an event kind no component writes.
	ErrUnknownEvent = errors.New("eventlog: unknown event kind")
)

// ErrUnproven is matched (errors.Is) by every error of ReadLog, OpenLog
// and CheckLogs that means the logs, well formed, prove nothing, or not
// what their checker was told — ErrNoEvents, ErrTruncated,
// ErrPartsMissing, ErrNoStart,
// ErrNoAdmissions, ErrLimitsMismatch and ErrLimitsMissing: the check
// failed. The other errors refuse what is not a log or not limits (a
// malformed line, ErrUnknownEvent, ErrBadLimits): the check could not be
// made.
var ErrUnproven = errors.New("eventlog: the logs prove nothing")

// unprovenError is a sentinel that also matches ErrUnproven.
type unprovenError struct{ msg string }

func (e *unprovenError) Error() string        { return e.msg }
func (e *unprovenError) Is(target error) bool { return target == ErrUnproven }

// ReadLog feeds every event of a JSON-lines log to w, in order, and then
// says whether the log was whole.
//
// A run writes a start event first and a stop event last, every line
// ending in a newline; afloat quota chaos, when the log goes to standard
// output, prints one summary line ({"ev":"summary",...}) after the stop,
// which ReadLog passes on like any line but does not count as an event.
// ReadLog returns ErrNoEvents when there is no event, and ErrTruncated
// when there is no stop event or when the last line has no newline: a
// writer stopped mid-line (a killed run, a full disk, a cut copy), even
// where what it wrote happens to read as an event. A line inside the log
// that is not an event — malformed, of a kind no component writes
// (ErrUnknownEvent), an admission of less than one token — is an error of
// its own, with its number. Events after the stop are passed on: the
// checker judges them.
//
// ReadLog reads one log; to check a run from several, read each, merge
// the events by time, then feed the checker — CheckLogs does all of it.
func ReadLog(r io.Reader, w Writer) error {
	return readLog(r, func(_ int, e *Event) error {
		w.Write(e)
		return nil
	})
}

// readLog is ReadLog with the line number of each event; an error of each
// is the log's, at that line.
func readLog(r io.Reader, each func(line int, e *Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	unterminated := false // the line scanned last had no newline
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		advance, token, err := bufio.ScanLines(data, atEOF)
		unterminated = atEOF && token != nil && bytes.IndexByte(data[:advance], '\n') < 0
		return advance, token, err
	})
	var (
		line, events, lastEvent int
		lastT                   int64
		stopped                 bool
	)
	for sc.Scan() {
		line++
		blank := len(bytes.TrimSpace(sc.Bytes())) == 0
		if unterminated && !blank {
			// Even a line that reads whole: its writer never finished it.
			return fmt.Errorf("%w: line %d is cut off: it has no newline at its end", ErrTruncated, line)
		}
		if blank {
			continue
		}
		e, err := ParseEvent(sc.Bytes())
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if e.Kind != Summary {
			events, lastEvent, lastT = events+1, line, e.T
			stopped = stopped || e.Kind == Stop
		}
		if err := each(line, &e); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
	}
	switch err := sc.Err(); {
	case err != nil:
		return fmt.Errorf("eventlog: reading the log after line %d: %w", line, err)
	case events == 0:
		return ErrNoEvents
	case !stopped:
		return fmt.Errorf("%w: no stop event after line %d (t_ns %d): its writer did not finish the log", ErrTruncated, lastEvent, lastT)
	}
	return nil
}

// OpenLog opens the log a File wrote at path: its rotated parts (PATH.1,
// PATH.2, …, Rotated), oldest first, then PATH itself, read as one — a
// rotation falls between two batches of whole lines, so the parts end to
// end are the log as it was written, and the line numbers of ReadLog's
// errors count from the oldest part's first line. A log that never
// rotated is PATH alone. It refuses, with ErrPartsMissing, a log whose
// parts do not run from 1 without a gap; a PATH without parts that does
// not exist is the error of opening it.
func OpenLog(path string) (io.ReadCloser, error) {
	parts, err := logParts(path)
	if err != nil {
		return nil, err
	}
	for i, p := range parts {
		if p.n != i+1 {
			what := fmt.Sprintf("%s.%d, the oldest part kept, follows parts since deleted", path, p.n)
			if i > 0 {
				what = fmt.Sprintf("%s.%d follows %s.%d", path, p.n, path, parts[i-1].n)
			}
			return nil, fmt.Errorf("%w: %s: keep every part of a log to check it", ErrPartsMissing, what)
		}
	}
	names := make([]string, 0, len(parts)+1)
	for _, p := range parts {
		names = append(names, p.path)
	}
	if _, err := os.Stat(path); err == nil || len(parts) == 0 {
		names = append(names, path) // absent with parts: killed mid-rotation
	}
	m := &multiFile{}
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			m.Close() //nolint:errcheck // read-only
			return nil, fmt.Errorf("eventlog: %w", err)
		}
		m.files = append(m.files, f)
	}
	return m, nil
}

// multiFile reads files end to end, closing each as it ends.
type multiFile struct{ files []*os.File }

func (m *multiFile) Read(p []byte) (int, error) {
	for len(m.files) > 0 {
		n, err := m.files[0].Read(p)
		if err == io.EOF {
			m.files[0].Close() //nolint:errcheck // read-only
			m.files = m.files[1:]
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
	return 0, io.EOF
}

func (m *multiFile) Close() error {
	for _, f := range m.files {
		f.Close() //nolint:errcheck // read-only
	}
	m.files = nil
	return nil
}

// Merge orders the events of several logs — of a cluster's processes,
// each writing its own — into one run for a Checker: by time, and at one
// instant by what must come first (a grant before its install, the old
// lease's end of use before the install of its successor, an install
// before the admissions under it), the order within each log kept
// otherwise. Within one process's log, writers on several goroutines may
// have appended events slightly out of order; the sort puts them right.
//
// Processes' clocks differ, so Merge orders by cause as well as by time:
// a region installs a lease only after the coordinator granted it, and
// stops spending a lease before the coordinator ends it on the region's
// return or supersession. Where a region's events say otherwise, the clock
// of the process that wrote them is off: Merge shifts all of that
// process's region events (installs, admissions, refusals, counts, ends
// of use, returns) by the least amount that puts every grant before its
// install — or, if none is needed, the least that puts every such end of
// use before the coordinator's end — and reports each shift (ClockShift).
// A pair further apart than MaxSkew is no clock's error: Merge does not
// correct for it, and the checker flags it. If no single shift satisfies
// both kinds of cause, grants come first and the checker flags the rest.
// Events keep their times otherwise; the coordinators' events are never
// moved.
//
// Each process is its own clock, even for one region: agents that served
// it in turn, or a standby beside it, each map their monotonic clock to
// Unix time from the wall clock they read when they started, and a wall
// clock stepped in between (NTP, a VM's host) puts them that far apart.
// Merge tells processes apart by their start events: events is the logs'
// events log after log, each in its log's order, and every process begins
// its log, or its part of one it appends to, with its start events.
//
// A process spends nothing after its last event. One killed (kill -9)
// writes no end of its use of the leases it held, and the agent started
// after it with the same log begins with start events of its own: so a
// process's use of every lease it installed and did not say it stopped
// spending ends at the latest time of its events (on its clock as
// corrected), and Merge marks it there — an event of a kind no log holds,
// one for each such lease, which the Checker takes as the end of that
// use. What a killed process decided after its last line reached the
// file is in no log, and no check counts it.
func Merge(events []Event) ([]Event, []ClockShift) {
	return mergeClocks(events, nil)
}

// mergeClocks is Merge with the indices in events where a log begins (a
// new clock even where a log lost its start events to rotation).
func mergeClocks(events []Event, logStarts []int) ([]Event, []ClockShift) {
	out := slices.Clone(events)
	procs := processes(out, logStarts)
	skews := alignClocks(out, procs)
	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return compareMerged(&out[i], &out[j]) })
	exits := processExits(out, procs, order)
	merged := make([]Event, 0, len(out)+len(exits))
	for _, i := range order {
		for len(exits) > 0 && compareMerged(&exits[0], &out[i]) < 0 {
			merged = append(merged, exits[0])
			exits = exits[1:]
		}
		merged = append(merged, out[i])
	}
	return append(merged, exits...), skews
}

// compareMerged orders two events of the merged run: by time, and at one
// instant by mergeRank.
func compareMerged(a, b *Event) int {
	if c := cmp.Compare(a.T, b.T); c != 0 {
		return c
	}
	return cmp.Compare(mergeRank(a.Kind), mergeRank(b.Kind))
}

// processes numbers the process that wrote each event, from 1: a process's
// events run from a block of start events, or from a log's beginning
// (logStarts, the indices where each log begins), to the next.
func processes(events []Event, logStarts []int) []int {
	procs := make([]int, len(events))
	process, started := 0, false // started: the last event was a start
	for i := range events {
		e := &events[i]
		if (e.Kind == Start && !started) || (len(logStarts) > 0 && logStarts[0] == i) {
			process++
		}
		for len(logStarts) > 0 && logStarts[0] <= i {
			logStarts = logStarts[1:]
		}
		started = e.Kind == Start
		procs[i] = process
	}
	return procs
}

// processExits are Merge's marks of the ends of processes: for each lease
// a process installed and did not say it stopped spending under, an exit
// at the latest time of the process's events, in the merged order (order:
// the indices of events, merged). Each process's uses are followed in
// that order, as the Checker will see them.
func processExits(events []Event, procs, order []int) []Event {
	type use struct{ tenant, region string }
	type process struct {
		last  int64
		using map[use]uint64
	}
	var all []*process
	for _, i := range order {
		e := &events[i]
		if e.Kind == Summary {
			continue // no event
		}
		for len(all) <= procs[i] {
			all = append(all, nil)
		}
		p := all[procs[i]]
		if p == nil {
			p = &process{last: e.T, using: map[use]uint64{}}
			all[procs[i]] = p
		}
		p.last = max(p.last, e.T)
		u := use{e.Tenant, e.Region}
		switch e.Kind {
		case Install:
			p.using[u] = e.ID
		case Supersede, Expire, Return:
			if p.using[u] == e.ID {
				delete(p.using, u)
			}
		}
	}
	var exits []Event
	for _, p := range all {
		if p == nil {
			continue
		}
		for _, u := range slices.SortedFunc(maps.Keys(p.using), func(a, b use) int {
			return cmp.Or(cmp.Compare(a.tenant, b.tenant), cmp.Compare(a.region, b.region))
		}) {
			exits = append(exits, Event{T: p.last, Kind: exit, Tenant: u.tenant, Region: u.region, ID: p.using[u]})
		}
	}
	slices.SortStableFunc(exits, func(a, b Event) int { return cmp.Compare(a.T, b.T) })
	return exits
}

// MaxSkew is the largest clock error Merge corrects: the default skew
// margin that leases are granted with (quota.DefaultSkewMargin), beyond
// which a lease's ends no longer cover the clocks' disagreement.
const MaxSkew = quota.DefaultSkewMargin

// ClockShift is a correction Merge made to one process's clock.
type ClockShift struct {
	// Region is the region the process served, and Since the time of
	// the first of its events that Merge shifted, as its log has it:
	// together they name the process.
	Region string `json:"region"`
	Since  int64  `json:"since_ns"`
	// Shift was added to the times of the region's events: positive when
	// its clock ran behind the coordinator's (an install before its
	// grant), negative when ahead (an end of use after the
	// coordinator's end that it caused).
	Shift time.Duration `json:"shift_ns"`
	// Lease is the lease whose events needed the largest correction.
	Lease uint64 `json:"lease"`
}

// regionKind says whether a region's process writes events of kind k
// (their times are on its clock).
func regionKind(k Kind) bool {
	switch k {
	case Install, Admit, Reject, Counts, Supersede, Expire, Return:
		return true
	}
	return false
}

// alignClocks shifts each process's region events, in place, as Merge
// describes, and returns the shifts made, in order of the processes'
// first events; procs numbers each event's process (processes).
func alignClocks(events []Event, procs []int) []ClockShift {
	type key struct {
		tenant string
		id     uint64
	}
	granted := map[key]int64{} // a lease's grant, by tenant and ID
	ended := map[key]int64{}   // its end caused by the region (returned, superseded)
	for i := range events {
		e := &events[i]
		k := key{e.Tenant, e.ID}
		switch {
		case e.Kind == Lease:
			if t, ok := granted[k]; !ok || e.T < t {
				granted[k] = e.T
			}
		case e.Kind == End && (e.Why == "returned" || e.Why == "superseded"):
			if t, ok := ended[k]; !ok || e.T < t {
				ended[k] = e.T
			}
		}
	}
	// A clock: one process's events of one region (a process serves one).
	type clock struct {
		process int
		region  string
	}
	type bound struct {
		low, high           time.Duration // the shift must be ≥ low and ≤ high
		lowLease, highLease uint64
		set                 bool
		since               int64
	}
	bounds := map[clock]*bound{}
	var clocks []clock
	owner := make([]*bound, len(events)) // the clock of each region event
	for i := range events {
		e := &events[i]
		if !regionKind(e.Kind) {
			continue
		}
		c := clock{procs[i], e.Region}
		b := bounds[c]
		if b == nil {
			b = &bound{low: math.MinInt64, high: math.MaxInt64, since: e.T}
			bounds[c] = b
			clocks = append(clocks, c)
		}
		owner[i] = b
		k := key{e.Tenant, e.ID}
		switch e.Kind {
		case Install:
			if t, ok := granted[k]; ok && time.Duration(t-e.T) > b.low && time.Duration(t-e.T) <= MaxSkew {
				b.low, b.lowLease, b.set = time.Duration(t-e.T), e.ID, true
			}
		case Supersede, Return:
			if t, ok := ended[k]; ok && time.Duration(t-e.T) < b.high && time.Duration(t-e.T) >= -MaxSkew {
				b.high, b.highLease, b.set = time.Duration(t-e.T), e.ID, true
			}
		}
	}
	shift := map[*bound]time.Duration{}
	var skews []ClockShift
	for _, c := range clocks {
		b := bounds[c]
		var sk ClockShift
		switch {
		case !b.set:
			continue
		case b.low > 0: // an install before its grant: later, by at least low
			sk = ClockShift{Region: c.region, Since: b.since, Shift: b.low, Lease: b.lowLease}
		case b.high < 0: // an end of use after the end it caused: earlier
			sk = ClockShift{Region: c.region, Since: b.since, Shift: max(b.high, b.low), Lease: b.highLease}
		default:
			continue
		}
		if sk.Shift != 0 {
			shift[b] = sk.Shift
			skews = append(skews, sk)
		}
	}
	for i, b := range owner {
		if b != nil {
			events[i].T += int64(shift[b])
		}
	}
	return skews
}

// mergeRank orders the events of one instant for Merge.
func mergeRank(k Kind) int {
	switch k {
	case Start, Tenant:
		return 0
	case Restart:
		return 1
	case Lease, Credit:
		return 2
	case Supersede, Expire, Return: // the old lease stops being used as the new one starts
		return 3
	case Install:
		return 4
	case Admit, Reject, Counts:
		return 5
	case exit: // after what the process did at its last instant
		return 6
	case End:
		return 7
	case Stop, Summary:
		return 9
	}
	return 8
}
