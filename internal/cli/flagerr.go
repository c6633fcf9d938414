package cli

import (
	"flag"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// The flag package's refusals, as it words them: a value its flag could
// not take, and a flag the command does not have.
var (
	badValue   = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-(\S+): (.*)$`)
	noSuchFlag = regexp.MustCompile(`^flag provided but not defined: -(\S+)$`)
)

// explain rewords a refusal of the flag package so that it names the
// flag and says what would do: "parse error" says neither what was
// wanted nor how to write it. A flag whose own Set said why keeps its
// words; a misspelt flag gets the nearest one the command has.
func (c *Command) explain(err error) error {
	msg := err.Error()
	if m := noSuchFlag.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("unknown flag --%s%s", m[1], c.nearestFlag(m[1]))
	}
	m := badValue.FindStringSubmatch(msg)
	if m == nil {
		return err
	}
	value, name, why := m[1], m[2], m[3]
	f := c.Lookup(name)
	if f == nil || (why != "parse error" && why != "value out of range") {
		return fmt.Errorf("--%s %q: %s", name, value, why)
	}
	getter, ok := f.Value.(flag.Getter)
	if !ok {
		return fmt.Errorf("--%s %q: %s", name, value, why)
	}
	var want string
	switch getter.Get().(type) {
	case time.Duration:
		want = "a duration such as 500ms, 10s or 1m30s"
	case int, int64:
		want = "a whole number such as 42"
	case uint, uint64:
		want = "a whole number, 0 or more, such as 42"
	case float64:
		want = "a number such as 0.5 or 100"
	case bool:
		want = "true or false"
	default:
		return fmt.Errorf("--%s %q: %s", name, value, why)
	}
	if why == "value out of range" {
		return fmt.Errorf("--%s %q: out of range: want %s", name, value, want)
	}
	return fmt.Errorf("--%s %q: want %s", name, value, want)
}

// nearestFlag names the command's flag closest to a misspelt one —
// within two edits, and closer than to any other — as
// ` (did you mean --name?)`, or says nothing.
func (c *Command) nearestFlag(name string) string {
	best, bestD, tie := "", 3, false
	c.VisitAll(func(f *flag.Flag) {
		switch d := editDistance(strings.TrimLeft(name, "-"), f.Name); {
		case d < bestD:
			best, bestD, tie = f.Name, d, false
		case d == bestD:
			tie = true
		}
	})
	if best == "" || tie {
		return ""
	}
	return fmt.Sprintf(" (did you mean --%s?)", best)
}
