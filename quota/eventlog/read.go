package eventlog

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
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
	// ErrUnknownEvent: a line names an event kind no component writes.
	ErrUnknownEvent = errors.New("eventlog: unknown event kind")
)

// ErrUnproven is matched (errors.Is) by every error of ReadLog and
// CheckLogs that means the logs, well formed, prove nothing, or not what
// their checker was told — ErrNoEvents, ErrTruncated, ErrNoStart,
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

// Merge orders the events of several logs — of a cluster's processes,
// each writing its own — into one run for a Checker: by time, and at one
// instant by what must come first (a grant before its install, the old
// lease's end of use before the install of its successor, an install
// before the admissions under it), the order within each log kept
// otherwise. Events keep their times: within one process's log, writers
// on several goroutines may have appended them slightly out of order.
func Merge(events []Event) []Event {
	out := slices.Clone(events)
	slices.SortStableFunc(out, func(a, b Event) int {
		if c := cmp.Compare(a.T, b.T); c != 0 {
			return c
		}
		return cmp.Compare(mergeRank(a.Kind), mergeRank(b.Kind))
	})
	return out
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
	case Admit, Reject:
		return 5
	case End:
		return 6
	case Stop, Summary:
		return 8
	}
	return 7
}
