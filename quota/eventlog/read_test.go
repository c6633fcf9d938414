package eventlog

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestReadLogWhole: ReadLog tells a whole log from one that ends before
// its run did, by the stop event and the newline every line ends with —
// a last line without one is cut off even when it reads as an event — and
// refuses a line of a kind no component writes, or an admission of less
// than one token, by its number.
func TestReadLogWhole(t *testing.T) {
	full := regionLog
	lines := strings.SplitAfter(full, "\n") // and "" after the last newline
	summary := `{"ev":"summary","seed":2,"violations":0}` + "\n"
	for i, tc := range []struct {
		log     string
		want    error // nil, ErrNoEvents or ErrTruncated
		wantMsg string
	}{
		{full, nil, ""},
		{full + summary, nil, ""},
		{strings.TrimSuffix(full, "\n"), ErrTruncated, fmt.Sprintf("line %d is cut off: it has no newline", len(lines)-1)},
		{full + strings.TrimSuffix(summary, "\n"), ErrTruncated, "cut off"},
		{full + "\n  \n ", nil, ""}, // blank lines, even the last without its newline, are not events
		{full + `{"t_ns":5000000000,"ev":"admit","tenant":"acme","region":"eu","n":1}` + "\n", nil, ""},
		{"", ErrNoEvents, "eventlog: log has no events"},
		{"\n \n", ErrNoEvents, ""},
		{summary, ErrNoEvents, ""},
		{strings.Join(lines[:3], ""), ErrTruncated, "no stop event after line 3"},
		{strings.Join(lines[:len(lines)-2], "") + summary, ErrTruncated, "no stop event"},
		{full[:len(lines[0])+10], ErrTruncated, "line 2 is cut off"},
		{full + summary[:12], ErrTruncated, "cut off"},
		{lines[0] + "{\n" + strings.Join(lines[1:], ""), nil, "line 2: eventlog: unexpected end of JSON input"}, // malformed, not truncated
		{lines[0] + `{"t_ns":1,"ev":"admitted","tenant":"acme","region":"eu","n":900}` + "\n" + strings.Join(lines[1:], ""), ErrUnknownEvent, `line 2: eventlog: unknown event kind "admitted": want one of start, admit,`},
		{lines[0] + `{"t_ns":1,"ev":"check","violations":0}` + "\n" + strings.Join(lines[1:], ""), ErrUnknownEvent, "line 2"},
		{lines[0] + `{"t_ns":1,"ev":"admit","tenant":"acme","region":"eu","n":-900}` + "\n" + strings.Join(lines[1:], ""), nil, `line 2: eventlog: admit: field "n" -900: want 1 or more`},
		{lines[0] + `{"t_ns":1,"ev":"reject","tenant":"acme","region":"eu"}` + "\n" + strings.Join(lines[1:], ""), nil, `line 2: eventlog: reject: field "n" 0`},
	} {
		c := NewChecker()
		err := ReadLog(strings.NewReader(tc.log), c)
		switch {
		case tc.want == nil && tc.wantMsg == "" && err != nil:
			t.Errorf("step %d: ReadLog = %v, want nil", i, err)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("step %d: ReadLog = %v, want %v", i, err, tc.want)
		case tc.want == nil && tc.wantMsg != "" && (err == nil || errors.Is(err, ErrTruncated) || errors.Is(err, ErrNoEvents) || errors.Is(err, ErrUnknownEvent)):
			t.Errorf("step %d: ReadLog = %v, want an error of its own", i, err)
		case tc.wantMsg != "" && !strings.Contains(fmt.Sprint(err), tc.wantMsg):
			t.Errorf("step %d: ReadLog = %v, want it to mention %q", i, err, tc.wantMsg)
		}
	}
}
