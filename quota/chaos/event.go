package chaos

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
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

// Event is one line of the event log. T is virtual time in nanoseconds —
// real time as the simulation defines it, not any node's clock — and Ev
// names what happened:
//
//	start      the run's tenant: rate, burst (tokens), n (regions), balance (E), why (mode)
//	admit      a region admitted n tokens of a tenant's traffic
//	reject     a region refused n tokens
//	lease      a coordinator granted a lease (written to its ledger first):
//	           id, epoch, rate, burst, transfer, and the interval in which it
//	           counts, activates_ns to expires_ns (on the virtual clock)
//	end        a coordinator stopped counting lease id (why: superseded,
//	           returned, expired)
//	credit     a coordinator took balance tokens of the return of lease id as credit
//	install    a region began spending under lease id
//	supersede  a region stopped spending under lease id: a newer one replaced it
//	expire     a region stopped spending under lease id: it ran out
//	return     a region gave lease id back (balance: tokens handed over)
//	traffic    the offered load changed (rates: tokens a second by region)
//	partition  a region was cut off from the coordinator; heal: reconnected
//	crash      the coordinator process died; restart: a successor fenced
//	           the ledger (epoch) and took over; a real coordinator adds
//	           live, the IDs of the leases it restored from its ledger
//	           (every older lease had stopped counting by then)
//	pause      the coordinator froze; wake: it resumed, still believing it leads
//	fenced     a coordinator found it had been superseded and stopped
//	skew       a node's clock: offset_ns and drift (a region's, or with no
//	           region the coordinator's at epoch; at t_ns > 0 a scripted
//	           change, continuous with what the clock read before)
//	sample     a region's state (Config.Sample): the lease id it spends
//	           under (none: no valid lease), its epoch, rate and burst, and
//	           the bucket's balance
//	tenant     an operator (by) changed the tenant's configuration at the
//	           coordinator, in force from t_ns: why is create, update,
//	           delete, seed (the config file's, written once) or load (what
//	           a new leader read from its ledger); rate, burst, n
//	           (regions), balance (E) and mode are the configuration after
//	           the change (before it, for a delete)
//	stop       the end of the run
type Event struct {
	T         int64              `json:"t_ns"`
	Ev        string             `json:"ev"`
	Tenant    string             `json:"tenant,omitempty"`
	Region    string             `json:"region,omitempty"`
	N         int64              `json:"n,omitempty"`
	ID        uint64             `json:"id,omitempty"`
	Epoch     uint64             `json:"epoch,omitempty"`
	Rate      quota.Micro        `json:"-"`
	Burst     quota.Micro        `json:"-"`
	Transfer  quota.Micro        `json:"-"`
	Balance   quota.Micro        `json:"-"`
	Activates int64              `json:"activates_ns,omitempty"`
	Expires   int64              `json:"expires_ns,omitempty"`
	Why       string             `json:"why,omitempty"`
	Rates     map[string]float64 `json:"rates,omitempty"`
	Offset    int64              `json:"offset_ns,omitempty"`
	Drift     float64            `json:"drift,omitempty"`
	Mode      string             `json:"mode,omitempty"`
	By        string             `json:"by,omitempty"`
	Live      *[]uint64          `json:"live,omitempty"`
}

// eventJSON is Event with the quota amounts in tokens, for reading logs.
type eventJSON struct {
	Event
	Rate     *json.Number `json:"rate,omitempty"`
	Burst    *json.Number `json:"burst,omitempty"`
	Transfer *json.Number `json:"transfer,omitempty"`
	Balance  *json.Number `json:"balance,omitempty"`
}

// AppendJSON appends the event as one line of JSON, amounts in tokens.
// Only the fields that carry something are written: admit and reject
// lines, which are most of a log, stay short.
func (e *Event) AppendJSON(b []byte) []byte {
	b = append(b, `{"t_ns":`...)
	b = strconv.AppendInt(b, e.T, 10)
	b = append(b, `,"ev":`...)
	b = appendString(b, e.Ev)
	str := func(k, v string) {
		if v != "" {
			b = append(b, ',', '"')
			b = append(b, k...)
			b = append(b, '"', ':')
			b = appendString(b, v)
		}
	}
	num := func(k string, v int64) {
		if v != 0 {
			b = append(b, ',', '"')
			b = append(b, k...)
			b = append(b, '"', ':')
			b = strconv.AppendInt(b, v, 10)
		}
	}
	amt := func(k string, v quota.Micro, always bool) {
		if v != 0 || always {
			b = append(b, ',', '"')
			b = append(b, k...)
			b = append(b, '"', ':')
			b = strconv.AppendFloat(b, v.Float(), 'f', -1, 64)
		}
	}
	str("tenant", e.Tenant)
	str("region", e.Region)
	num("n", e.N)
	num("id", int64(e.ID))
	num("epoch", int64(e.Epoch))
	lease := e.Ev == "lease" || e.Ev == "tenant"
	amt("rate", e.Rate, lease)
	amt("burst", e.Burst, lease)
	amt("transfer", e.Transfer, false)
	amt("balance", e.Balance, e.Ev == "return" || e.Ev == "credit")
	num("activates_ns", e.Activates)
	num("expires_ns", e.Expires)
	str("why", e.Why)
	str("mode", e.Mode)
	str("by", e.By)
	num("offset_ns", e.Offset)
	if e.Drift != 0 {
		b = append(b, `,"drift":`...)
		b = strconv.AppendFloat(b, e.Drift, 'g', -1, 64)
	}
	if e.Live != nil {
		b = append(b, `,"live":[`...)
		for i, id := range *e.Live {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, id, 10)
		}
		b = append(b, ']')
	}
	if len(e.Rates) > 0 {
		b = append(b, `,"rates":{`...)
		for i, k := range slices.Sorted(maps.Keys(e.Rates)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = strconv.AppendFloat(b, e.Rates[k], 'f', -1, 64)
		}
		b = append(b, '}')
	}
	return append(b, '}', '\n')
}

// appendString appends s as a JSON string. strconv.AppendQuote is JSON
// only for printable ASCII (it writes \x7f, which JSON does not have), so
// anything else goes through encoding/json; the names a run writes are
// plain ASCII and take the short path.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// ParseEvent reads one line of an event log.
func ParseEvent(line []byte) (Event, error) {
	var j eventJSON
	if err := json.Unmarshal(line, &j); err != nil {
		return Event{}, fmt.Errorf("chaos: event log: %w", err)
	}
	e := j.Event
	for _, f := range []struct {
		n   *json.Number
		dst *quota.Micro
		key string
	}{{j.Rate, &e.Rate, "rate"}, {j.Burst, &e.Burst, "burst"}, {j.Transfer, &e.Transfer, "transfer"}, {j.Balance, &e.Balance, "balance"}} {
		if f.n == nil {
			continue
		}
		// Parse as decimal to get the micro-tokens back exactly.
		m, err := parseMicro(f.n.String())
		if err != nil {
			return Event{}, fmt.Errorf("chaos: event log: field %q: %w", f.key, err)
		}
		*f.dst = m
	}
	if e.Ev == "" {
		return Event{}, fmt.Errorf("chaos: event log: field \"ev\" missing")
	}
	if !slices.Contains(kinds, e.Ev) && e.Ev != "summary" {
		return Event{}, fmt.Errorf("chaos: event log: %w %q: want one of %s (or summary)", ErrUnknownEvent, e.Ev, strings.Join(kinds, ", "))
	}
	// An admission of 0 or fewer tokens would take tokens back from the
	// count the bound is checked on; no component writes one.
	if (e.Ev == "admit" || e.Ev == "reject") && e.N < 1 {
		return Event{}, fmt.Errorf("chaos: event log: %s: field \"n\" %d: want 1 or more tokens", e.Ev, e.N)
	}
	return e, nil
}

// kinds are the event kinds of a log (Event's ev), in the order Event's
// documentation lists them. A reader refuses any other (ErrUnknownEvent),
// except the summary line afloat quota chaos prints after a log: a kind
// it does not know is a kind the checker would skip, so a misspelt or
// forged admission would pass unchecked.
var kinds = []string{"start", "admit", "reject", "lease", "end", "credit", "install", "supersede", "expire",
	"return", "traffic", "partition", "heal", "crash", "restart", "pause", "wake", "fenced", "skew", "sample",
	"tenant", "stop"}

// parseMicro reads a decimal number of tokens with up to six decimals.
func parseMicro(s string) (quota.Micro, error) {
	neg := false
	if s != "" && s[0] == '-' {
		neg, s = true, s[1:]
	}
	whole, frac, _ := cut(s, '.')
	if whole == "" || len(frac) > 6 {
		return 0, fmt.Errorf("%q: want a number of tokens with at most six decimals", s)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > 1e12 {
		return 0, fmt.Errorf("%q: want a number of tokens up to 1e12", s)
	}
	var f int64
	if frac != "" {
		for len(frac) < 6 {
			frac += "0"
		}
		if f, err = strconv.ParseInt(frac, 10, 64); err != nil || f < 0 {
			return 0, fmt.Errorf("%q: bad decimals", s)
		}
	}
	m := quota.Micro(w)*quota.One + quota.Micro(f)
	if neg {
		m = -m
	}
	return m, nil
}

func cut(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// JSONWriter writes events as JSON lines, buffered; Flush at the end.
type JSONWriter struct {
	w   *bufio.Writer
	buf []byte
	err error
}

// NewJSONWriter writes the event log to w.
func NewJSONWriter(w io.Writer) *JSONWriter {
	return &JSONWriter{w: bufio.NewWriterSize(w, 1<<16)}
}

// Write implements EventWriter.
func (j *JSONWriter) Write(e *Event) {
	if j.err != nil {
		return
	}
	j.buf = e.AppendJSON(j.buf[:0])
	_, j.err = j.w.Write(j.buf)
}

// Flush writes what is buffered and reports the first error.
func (j *JSONWriter) Flush() error {
	if j.err != nil {
		return j.err
	}
	return j.w.Flush()
}

// Tee sends every event to each writer in turn.
type Tee []EventWriter

// Write implements EventWriter.
func (t Tee) Write(e *Event) {
	for _, w := range t {
		w.Write(e)
	}
}

// Errors of ReadLog for a log that ends before its run did. A checker fed
// such a log has seen only part of a run: its report would pass what it
// never saw.
var (
	// ErrNoEvents: the log holds no event — an empty file, blank lines,
	// or a summary line alone.
	ErrNoEvents = errors.New("chaos: log has no events")
	// ErrTruncated: the log stops before the end of its run — no stop
	// event, or a last line cut off before its newline.
	ErrTruncated = errors.New("chaos: log is truncated")
	// ErrUnknownEvent: a line names an event kind no component writes.
	ErrUnknownEvent = errors.New("chaos: unknown event kind")
)

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
func ReadLog(r io.Reader, w EventWriter) error {
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
		if e.Ev != "summary" {
			events, lastEvent, lastT = events+1, line, e.T
			stopped = stopped || e.Ev == "stop"
		}
		if err := each(line, &e); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
	}
	switch err := sc.Err(); {
	case err != nil:
		return fmt.Errorf("chaos: reading the log after line %d: %w", line, err)
	case events == 0:
		return ErrNoEvents
	case !stopped:
		return fmt.Errorf("%w: no stop event after line %d (%v of virtual time): the run did not finish writing it", ErrTruncated, lastEvent, time.Duration(lastT))
	}
	return nil
}

// Merge orders the events of several logs — of a cluster's processes,
// each writing its own — into one run for a Checker: by time, and at one
// instant by what must come first (a grant before its install, the old
// lease's end of use before the install of its successor, an install
// before the admissions under it), the order within each log kept
// otherwise. Events keep their
// times: within one process's log, writers on several goroutines may
// have appended them slightly out of order.
func Merge(events []Event) []Event {
	out := slices.Clone(events)
	slices.SortStableFunc(out, func(a, b Event) int {
		if c := cmp.Compare(a.T, b.T); c != 0 {
			return c
		}
		return cmp.Compare(rank(a.Ev), rank(b.Ev))
	})
	return out
}

func rank(ev string) int {
	switch ev {
	case "start", "tenant":
		return 0
	case "restart":
		return 1
	case "lease", "credit":
		return 2
	case "supersede", "expire", "return": // the old lease stops being used as the new one starts
		return 3
	case "install":
		return 4
	case "admit", "reject":
		return 5
	case "end":
		return 6
	case "stop", "summary":
		return 8
	}
	return 7
}
