package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
)

// Uint32 is a uint32 flag (flag.Value) whose error names the allowed
// range, as a seed's does.
type Uint32 uint32

func (u *Uint32) String() string { return strconv.FormatUint(uint64(*u), 10) }

// Set reads a decimal from 0 to 2^32-1.
func (u *Uint32) Set(v string) error {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return fmt.Errorf("want an integer from 0 to %d", uint32(math.MaxUint32))
	}
	*u = Uint32(n)
	return nil
}

// ParseRange reads a range of uint32s, A-B, naming flagName in its error;
// how many and in what order is for the package that uses them to check.
func ParseRange(flagName, s string) (from, to uint32, err error) {
	a, b, ok := strings.Cut(s, "-")
	first, err1 := strconv.ParseUint(a, 10, 32)
	last, err2 := strconv.ParseUint(b, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("%s %q: want A-B, integers from 0 to %d", flagName, s, uint32(math.MaxUint32))
	}
	return uint32(first), uint32(last), nil
}

// IntList is a flag (flag.Value) of comma-separated integers into Ints;
// Want says what they are in its error ("batch sizes from 0 to 10").
type IntList struct {
	Ints *[]int
	Want string
}

func (l IntList) String() string {
	if l.Ints == nil { // the zero value flag.PrintDefaults makes
		return ""
	}
	s := make([]string, len(*l.Ints))
	for i, n := range *l.Ints {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// Set replaces the list with v's.
func (l IntList) Set(v string) error {
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("want comma-separated %s", l.Want)
		}
		out = append(out, n)
	}
	*l.Ints = out
	return nil
}

// Strings is a repeatable flag (flag.Value): each use appends its value,
// as --host NAME given once per name.
type Strings []string

func (s *Strings) String() string { return strings.Join(*s, ",") }

// Set appends v.
func (s *Strings) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// List is a flag (flag.Value) of comma-separated items, as --etcd
// ENDPOINTS: Set splits at commas and trims the items; what each must be
// is for the package that takes them to check.
type List []string

func (l *List) String() string { return strings.Join(*l, ",") }

// Set replaces the list with v's items, leaving out empty ones; a value
// with none is refused, as a slip rather than a request for the default.
func (l *List) Set(v string) error {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	if len(out) == 0 {
		return errors.New("empty: want one item or more, comma-separated")
	}
	*l = out
	return nil
}

// Optional is a flag (flag.Value) for a field a command line may leave
// out: *P stays nil until the flag is given, then points at its value,
// zero included, as an update's fields that keep their values unless
// given.
type Optional[T float64 | string] struct{ P **T }

func (o Optional[T]) String() string {
	if o.P == nil || *o.P == nil { // the zero value flag.PrintDefaults makes
		return ""
	}
	return fmt.Sprint(**o.P)
}

// Set points *P at v's value: a float64 as the flag package reads one, a
// string as it is.
func (o Optional[T]) Set(v string) error {
	x := new(T)
	switch p := any(x).(type) {
	case *float64:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return errors.New("parse error") // as the flag package says it
		}
		*p = f
	case *string:
		*p = v
	}
	*o.P = x
	return nil
}

// WriteJSON prints v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(v)
}

// WriteFile creates path and writes it with write.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	return cmp.Or(err, f.Close())
}

// NewLogger returns a logger writing to w in format, "text" or "json", at
// level, "debug", "info", "warn" or "error": what a --log-format and a
// --log-level flag say. Its errors name those flags.
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}
