package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/afloat/afloat/internal/jsonnum"
)

// Control names one of the player's eight levers.
type Control string

// The controls, by the names action files and share links use.
const (
	ControlFleetFloor        Control = "fleet_floor"
	ControlAutoscaling       Control = "autoscaling"
	ControlTargetUtilization Control = "target_utilization"
	ControlCacheTTL          Control = "cache_ttl_s"
	ControlWarmup            Control = "warmup"
	ControlShedLowPriority   Control = "shed_low_priority"
	ControlHeavyFeature      Control = "heavy_feature"
	ControlRollback          Control = "rollback"
)

// ValueKind is the type of value a control takes.
type ValueKind string

// The kinds of control values.
const (
	KindInteger ValueKind = "integer" // a whole number in [Min, Max]
	KindNumber  ValueKind = "number"  // a number in [Min, Max]
	KindBool    ValueKind = "bool"    // true or false
	KindPress   ValueKind = "press"   // a button: no value
)

// ControlSpec describes a control: its value and what it does.
type ControlSpec struct {
	Control Control   `json:"control"`
	Kind    ValueKind `json:"kind"`
	Min     float64   `json:"min"` // for integer and number kinds; always sent, 0 included
	Max     float64   `json:"max"`
	Label   string    `json:"label"`
	Help    string    `json:"help"`
	Unit    string    `json:"unit,omitempty"`
}

var controlSpecs = []ControlSpec{
	{Control: ControlFleetFloor, Kind: KindInteger, Min: 0, Max: MaxFleet, Label: "Fleet floor", Unit: "instances",
		Help: "Minimum instances. Raising it launches instances at once; they still need the boot delay before serving."},
	{Control: ControlAutoscaling, Kind: KindBool, Label: "Autoscaling",
		Help: "Target tracking on utilization; no new scale-out while instances boot. Off = exactly the floor."},
	{Control: ControlTargetUtilization, Kind: KindNumber, Min: 0.2, Max: 0.95, Label: "Target utilization",
		Help: "Lower = more headroom and more cost. Measured utilization cannot exceed 100 %, so a saturated fleet grows only step by step."},
	{Control: ControlCacheTTL, Kind: KindNumber, Min: 1, Max: 3600, Label: "Cache TTL", Unit: "s",
		Help: "Longer TTL = more hits, but answers can be older (mean age ≈ TTL/2)."},
	{Control: ControlWarmup, Kind: KindPress, Label: "Cache warm-up",
		Help: "Loads hot keys for 6 min (+12 % of the cache per minute) at the cost of 600 extra DB queries/s."},
	{Control: ControlShedLowPriority, Kind: KindNumber, Min: 0, Max: 1, Label: "Load shedding",
		Help: "Share of the 30 % low-priority traffic (prefetch, batch, crawlers) rejected at the load balancer with \"try again later\"."},
	{Control: ControlHeavyFeature, Kind: KindBool, Label: "Heavy feature (recommendations)",
		Help: "Adds 20 ms of CPU and one DB query per request. Off = graceful degradation."},
	{Control: ControlRollback, Kind: KindPress, Label: "Rollback",
		Help: "Redeploys the last good build on a new fleet (5 min, billed twice), then switches traffic. Pressing again restarts the preparation; with no bad build live it only costs money."},
}

// ControlSpecs returns the eight controls in display order.
func ControlSpecs() []ControlSpec {
	return append([]ControlSpec(nil), controlSpecs...)
}

// LookupControl returns the spec of a control.
func LookupControl(c Control) (ControlSpec, bool) {
	for _, s := range controlSpecs {
		if s.Control == c {
			return s, true
		}
	}
	return ControlSpec{}, false
}

func controlNames() string {
	names := make([]string, len(controlSpecs))
	for i, s := range controlSpecs {
		names[i] = string(s.Control)
	}
	return strings.Join(names, ", ")
}

// rangeText says what values a control allows, for error messages.
func (s ControlSpec) rangeText() string {
	switch s.Kind {
	case KindInteger:
		return fmt.Sprintf("an integer from %g to %g", s.Min, s.Max)
	case KindNumber:
		return fmt.Sprintf("a number from %g to %g", s.Min, s.Max)
	case KindBool:
		return "true or false"
	default:
		return "no value (it is a button)"
	}
}

// Action is one move of the player: set a control, or press a button, at
// the start of a minute.
//
// Value holds the setting of a numeric control, 1 or 0 for the switches
// (autoscaling, heavy_feature) and 0 for the buttons (warmup, rollback). In
// JSON it is written as the spec's action files have it:
// {"minute": 12, "control": "heavy_feature", "value": false}, and no value
// for a button.
type Action struct {
	Minute  int
	Control Control
	Value   float64
}

// Set returns an action that sets a numeric control.
func Set(minute int, c Control, v float64) Action {
	return Action{Minute: minute, Control: c, Value: v}
}

// Switch returns an action that turns a switch on or off.
func Switch(minute int, c Control, on bool) Action {
	a := Action{Minute: minute, Control: c}
	if on {
		a.Value = 1
	}
	return a
}

// Press returns an action that presses a button.
func Press(minute int, c Control) Action {
	return Action{Minute: minute, Control: c}
}

// Bool reports a switch's setting.
func (a Action) Bool() bool { return a.Value != 0 }

// ActionError says what is wrong with an action and where.
type ActionError struct {
	Line  int    // line in an action file, from 1; 0 when not read from a file
	Index int    // position in the list of actions, from 0
	Field string // "minute", "control", "value", or "" for the whole line
	Msg   string // names the allowed range
}

func (e *ActionError) Error() string {
	var b strings.Builder
	b.WriteString("sim: ")
	if e.Line > 0 {
		fmt.Fprintf(&b, "actions line %d: ", e.Line)
	} else {
		fmt.Fprintf(&b, "action %d: ", e.Index)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap makes every ActionError match ErrInvalidAction.
func (e *ActionError) Unwrap() error { return ErrInvalidAction }

// Validate checks an action for a run of the given number of minutes: a
// known control, a value of the right type in its range, and a minute
// within the run.
func (a Action) Validate(minutes int) error {
	spec, ok := LookupControl(a.Control)
	if !ok {
		return &ActionError{Field: "control", Msg: fmt.Sprintf("unknown control %q; want one of %s", a.Control, controlNames())}
	}
	if a.Minute < 0 || a.Minute >= minutes {
		return &ActionError{Field: "minute", Msg: fmt.Sprintf("%d is outside the run; want an integer from 0 to %d", a.Minute, minutes-1)}
	}
	bad := func() error {
		return &ActionError{Field: "value", Msg: fmt.Sprintf("%s takes %s, got %v", a.Control, spec.rangeText(), a.Value)}
	}
	switch spec.Kind {
	case KindInteger:
		if a.Value != math.Trunc(a.Value) || a.Value < spec.Min || a.Value > spec.Max {
			return bad()
		}
	case KindNumber:
		if !(a.Value >= spec.Min && a.Value <= spec.Max) { // also refuses NaN
			return bad()
		}
	case KindBool:
		if a.Value != 0 && a.Value != 1 {
			return bad()
		}
	case KindPress:
		if a.Value != 0 {
			return bad()
		}
	}
	return nil
}

// MarshalJSON writes the action in the action-file form.
func (a Action) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"minute":`)
	b.WriteString(strconv.Itoa(a.Minute))
	b.WriteString(`,"control":`)
	name, _ := json.Marshal(string(a.Control))
	b.Write(name)
	spec, _ := LookupControl(a.Control)
	switch spec.Kind {
	case KindPress:
	case KindBool:
		b.WriteString(`,"value":`)
		b.WriteString(strconv.FormatBool(a.Bool()))
	default:
		if math.IsNaN(a.Value) || math.IsInf(a.Value, 0) {
			return nil, &ActionError{Field: "value", Msg: fmt.Sprintf("%v cannot be written as JSON", a.Value)}
		}
		b.WriteString(`,"value":`)
		b.WriteString(strconv.FormatFloat(a.Value, 'g', -1, 64))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads one action in the action-file form. It checks the
// types and the control's range, but not the minute against a run's
// length, which it cannot know: call Validate for that.
func (a *Action) UnmarshalJSON(data []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return &ActionError{Msg: "malformed JSON: " + jsonReason(err) + `; want an object like {"minute": 12, "control": "heavy_feature", "value": false}`}
	}
	if fields == nil {
		return &ActionError{Msg: `want an object like {"minute": 12, "control": "heavy_feature", "value": false}, got null`}
	}
	for k := range fields {
		if k != "minute" && k != "control" && k != "value" {
			return &ActionError{Field: k, Msg: "unknown field; an action has minute, control and value"}
		}
	}
	if topLevelKeys(data) != len(fields) {
		// encoding/json lets the last of two equal keys win, silently.
		k, _ := duplicateKey(data)
		return &ActionError{Field: k, Msg: "given more than once"}
	}
	var out Action

	rawMinute, ok := fields["minute"]
	if !ok {
		return &ActionError{Field: "minute", Msg: "missing; want an integer from 0"}
	}
	// Read exactly, in JSON's grammar: a float64 target would take null as
	// 0 (a run's first minute) and 1e-400 as 0.
	m, err := jsonnum.Int(rawMinute)
	if err != nil || m < 0 || m > math.MaxInt32 {
		return &ActionError{Field: "minute", Msg: fmt.Sprintf("want an integer from 0, got %s", clip(rawMinute))}
	}
	out.Minute = int(m)

	rawControl, ok := fields["control"]
	if !ok {
		return &ActionError{Field: "control", Msg: "missing; want one of " + controlNames()}
	}
	var name string
	if err := json.Unmarshal(rawControl, &name); err != nil {
		return &ActionError{Field: "control", Msg: fmt.Sprintf("want a string, one of %s, got %s", controlNames(), clip(rawControl))}
	}
	out.Control = Control(name)
	spec, ok := LookupControl(out.Control)
	if !ok {
		return &ActionError{Field: "control", Msg: fmt.Sprintf("unknown control %q; want one of %s", clip([]byte(name)), controlNames())}
	}

	rawValue, hasValue := fields["value"]
	if hasValue && string(bytes.TrimSpace(rawValue)) == "null" {
		hasValue = false
	}
	wrong := func() error {
		got := "no value"
		if hasValue {
			got = string(clip(rawValue))
		}
		return &ActionError{Field: "value", Msg: fmt.Sprintf("%s takes %s, got %s", spec.Control, spec.rangeText(), got)}
	}
	switch spec.Kind {
	case KindPress:
		if hasValue {
			return wrong()
		}
	case KindBool:
		var on bool
		if !hasValue || json.Unmarshal(rawValue, &on) != nil {
			return wrong()
		}
		if on {
			out.Value = 1
		}
	case KindInteger:
		// Exactly, as the minute: 1e-400 is not the integer 0.
		if !hasValue {
			return wrong()
		}
		v, err := jsonnum.Int(rawValue)
		if err != nil {
			return wrong()
		}
		out.Value = float64(v)
	default:
		if !hasValue || json.Unmarshal(rawValue, &out.Value) != nil {
			return wrong()
		}
	}
	// The range check needs no run length; any minute passes here.
	if err := out.Validate(out.Minute + 1); err != nil {
		return err
	}
	*a = out
	return nil
}

// topLevelKeys counts the keys of data, a JSON object that encoding/json
// has read, as written (a key given twice counts twice). It is a scan of
// the bytes, a tenth of the cost of a decoder's tokens: a body holds up to
// 100,000 actions.
func topLevelKeys(data []byte) int {
	depth, n := 0, 0
	inString, escaped, key := false, false, false
	for _, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			if depth == 1 && key {
				n++
				key = false
			}
		case '{', '[':
			depth++
			key = depth == 1
		case '}', ']':
			depth--
		case ',':
			key = depth == 1
		}
	}
	return n
}

// duplicateKey returns a key given twice in data, a JSON object that
// encoding/json has read.
func duplicateKey(data []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // {
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		k, _ := tok.(string)
		if seen[k] {
			return k, true
		}
		seen[k] = true
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return "", false
		}
	}
	return "", false
}

// jsonReason turns a decoding error into a short reason without Go type
// names.
func jsonReason(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("%s (at byte %d)", syn.Error(), syn.Offset)
	case errors.As(err, &typ):
		return "not a JSON object"
	default:
		return err.Error()
	}
}

// clip shortens raw input quoted in an error message.
func clip(b []byte) []byte {
	const most = 40
	if len(b) > most {
		return append(append([]byte(nil), b[:most]...), "…"...)
	}
	return b
}

// MaxActions bounds an action file: more than a player could press in a
// week of minutes, few enough to keep a bad file from exhausting memory.
const MaxActions = 100000

// maxLine bounds one line of an action file.
const maxLine = 4096

// maxReported is how many bad lines ParseActions reports at once.
const maxReported = 10

// ParseActions reads an action file for a run of the given length: JSON
// lines, one action per line, as
// {"minute": 12, "control": "heavy_feature", "value": false}. Blank lines
// are skipped. Every bad line is reported (up to ten) with its line number
// and the field at fault; the actions come back sorted by minute, keeping
// the file's order within a minute. minutes ≤ 0 accepts any minute, for
// when the run's length is not known yet (Config.Validate checks it).
func ParseActions(r io.Reader, minutes int) ([]Action, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256), maxLine)
	var (
		actions []Action
		errs    []error
		line    int
		bad     int
	)
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var a Action
		err := a.UnmarshalJSON(text)
		if err == nil && minutes > 0 {
			err = a.Validate(minutes)
		}
		if err != nil {
			var ae *ActionError
			if errors.As(err, &ae) {
				ae.Line = line
			}
			bad++
			if len(errs) < maxReported {
				errs = append(errs, err)
			}
			continue
		}
		if len(actions) == MaxActions {
			return nil, &ActionError{Line: line, Msg: fmt.Sprintf("more than %d actions", MaxActions)}
		}
		actions = append(actions, a)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &ActionError{Line: line + 1, Msg: fmt.Sprintf("line longer than %d bytes", maxLine)}
		}
		return nil, fmt.Errorf("sim: reading actions: %w", err)
	}
	if bad > len(errs) {
		errs = append(errs, fmt.Errorf("sim: %d more bad lines", bad-len(errs)))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sortActions(actions)
	return actions, nil
}

// sortActions orders actions by minute, stably: actions within a minute are
// applied in the order they were given.
func sortActions(actions []Action) {
	sort.SliceStable(actions, func(i, j int) bool { return actions[i].Minute < actions[j].Minute })
}

// WriteActions writes actions as an action file that ParseActions reads
// back unchanged.
func WriteActions(w io.Writer, actions []Action) error {
	bw := bufio.NewWriter(w)
	for _, a := range actions {
		b, err := a.MarshalJSON()
		if err != nil {
			return err
		}
		bw.Write(b)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
