package cli

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testProgram has a default, a group with its own noun and paragraph, a
// group without, and a hidden entry; its commands print what they were
// given.
func testProgram() *Program {
	echo := func(c *Command, args []string) int {
		n := c.Int("n", 0, "a number, `N`")
		rest, status, ok := c.ParseArgs(args)
		if !ok {
			return status
		}
		c.Stdout.Write([]byte(c.Name() + " " + strings.Join(rest, " ") + "\n"))
		if *n < 0 {
			return c.Refuse(errors.New("--n: want 0 or more"))
		}
		return ExitOK
	}
	return &Program{
		Name: "tool", About: "tool does things.", Default: "serve",
		Commands: []Entry{
			{Path: "serve", Synopsis: "tool serve", Summary: "serve", Run: echo},
			{Path: "serve stop", Synopsis: "tool serve stop", Summary: "stop serving", Run: echo, Hidden: true},
			{Path: "lab one", Synopsis: "tool lab one [--n N]", Summary: "the first lab\nover two lines", Run: echo,
				Notes: func(w io.Writer) { io.WriteString(w, "\nNotes of one.\n") }},
			{Path: "lab two", Synopsis: "tool lab two", Summary: "the second", Run: echo},
			{Path: "lab secret", Synopsis: "tool lab secret", Run: echo, Hidden: true},
			{Path: "x y", Synopsis: "tool x y", Summary: "why", Run: echo},
		},
		Nouns:      map[string]string{"lab": "lab"},
		GroupAbout: func(g string) string { return map[string]string{"lab": "The labs.\n"}[g] },
	}
}

func TestDispatch(t *testing.T) {
	for i, tc := range []struct {
		args           []string
		status         int
		stdout, stderr string
	}{
		{nil, ExitOK, "serve \n", ""},
		{[]string{"lab", "one", "a", "b"}, ExitOK, "lab one a b\n", ""},
		{[]string{"serve", "stop", "a"}, ExitOK, "serve stop a\n", ""},
		{[]string{"serve", "a", "stop"}, ExitOK, "serve a stop\n", ""},
		{[]string{"serve", "--n", "1", "stop"}, ExitOK, "serve stop\n", ""},
		{[]string{"lab", "secret"}, ExitOK, "lab secret \n", ""},
		{[]string{"lab", "one", "--n", "-1"}, ExitUsage, "lab one \n", "tool lab one: --n: want 0 or more\nRun 'tool lab one --help' for usage.\n"},
		{[]string{"lab", "one", "--n", "x"}, ExitUsage, "", "tool lab one: --n \"x\": want a whole number such as 42\nRun 'tool lab one --help' for usage.\n"},
		{[]string{"lab", "one", "--nn", "1"}, ExitUsage, "", "tool lab one: unknown flag --nn (did you mean --n?)\n"},
		{[]string{"nosuch"}, ExitUsage, "", "tool: unknown command \"nosuch\"; run 'tool --help' for the commands\n"},
		{[]string{"serv"}, ExitUsage, "", "tool: unknown command \"serv\" (did you mean \"serve\"?); run 'tool --help' for the commands\n"},
		{[]string{"--bogus"}, ExitUsage, "", "tool: unknown command \"--bogus\"; run 'tool --help' for the commands\n"},
		{[]string{"lab"}, ExitUsage, "", "tool lab: missing lab\n\nUsage:\n  tool lab one [--n N]\n  tool lab two\n\nThe labs.\n\nLabs:\n" +
			"  one   the first lab\n        over two lines\n  two   the second\n\nRun 'tool lab <lab> --help' for its flags.\n"},
		{[]string{"lab", "three"}, ExitUsage, "", "tool lab: unknown lab \"three\"\n\nUsage:"},
		{[]string{"x", "z"}, ExitUsage, "", "tool x: unknown subcommand \"z\"\n\nUsage:\n  tool x y\n\nSubcommands:\n  y   why\n"},
		{[]string{"x", "--help"}, ExitOK, "Usage:\n  tool x y\n\nSubcommands:\n  y   why\n\nRun 'tool x <subcommand> --help' for its flags.\n", ""},
		{[]string{"lab", "one", "-h"}, ExitOK, "Usage:\n  tool lab one [--n N]\n\nFlags:\n  -n N\n    \ta number, N\n\nNotes of one.\n", ""},
	} {
		var out, errOut bytes.Buffer
		status := testProgram().Run(tc.args, strings.NewReader(""), &out, &errOut)
		if status != tc.status || !strings.HasPrefix(out.String(), tc.stdout) || !strings.HasPrefix(errOut.String(), tc.stderr) ||
			(tc.stdout == "") != (out.Len() == 0) {
			t.Errorf("step %d: tool %q: status %d, stdout %q, stderr %q; want %d, %q…, %q…", i, tc.args, status, out.String(), errOut.String(), tc.status, tc.stdout, tc.stderr)
		}
	}
}

func TestHelpListsTheTable(t *testing.T) {
	want := `tool does things.

Usage:
  tool [command] [subcommand] [flags]

Commands:
  serve        serve
  lab one      the first lab
               over two lines
  lab two      the second
  x y          why
  help         print this help

Run 'tool <command> --help' for a command's flags.
`
	for _, arg := range []string{"help", "-h", "-help", "--help"} {
		var out, errOut bytes.Buffer
		if status := testProgram().Run([]string{arg}, nil, &out, &errOut); status != ExitOK || out.String() != want || errOut.Len() > 0 {
			t.Errorf("tool %s: status %d, stdout %q, stderr %q; want 0 and\n%s", arg, status, out.String(), errOut.String(), want)
		}
	}
	p := testProgram()
	p.Default = ""
	var out, errOut bytes.Buffer
	if status := p.Run(nil, nil, &out, &errOut); status != ExitUsage || out.Len() > 0 || errOut.String() != want {
		t.Errorf("no command and no default: status %d, stdout %q, stderr %q; want 2 and the help on stderr", status, out.String(), errOut.String())
	}
}

// command returns a Command of an entry with flags a, b and n, parsed
// from args.
func command(t *testing.T, args ...string) *Command {
	t.Helper()
	fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
	c := &Command{FlagSet: fs, Stdout: io.Discard, Stderr: io.Discard, prog: "tool", entry: &Entry{Path: "cmd"}}
	c.Bool("a", false, "")
	c.Bool("b", false, "")
	c.Int("n", 0, "")
	c.Duration("d", 0, "")
	if status, ok := c.ParseFlags(args); !ok {
		t.Fatalf("%q: status %d", args, status)
	}
	return c
}

func TestFlagRules(t *testing.T) {
	for i, tc := range []struct {
		args  []string
		check func(c *Command) error
		want  string
	}{
		{[]string{"-a", "-b"}, func(c *Command) error { return c.NotWith("a", ": give one", "n", "b") }, "--b does not go with --a: give one"},
		{[]string{"-a", "-n", "1"}, func(c *Command) error { return c.NotWith("b", "", "a", "n") }, ""},
		{[]string{"-b"}, func(c *Command) error { return c.OnlyWith("a", "n", "b") }, "--b only with --a"},
		{[]string{"-a", "-b"}, func(c *Command) error { return c.OnlyWith("a", "b") }, ""},
		{[]string{"-n", "0"}, func(c *Command) error { return c.NoZero("d", "n") }, "--n 0: want more than 0; leave it out for the default"},
		{[]string{"-d", "0s"}, func(c *Command) error { return c.NoZero("d") }, "--d 0s: want more than 0"},
		{[]string{}, func(c *Command) error { return c.NoZero("d", "n") }, ""},
		{[]string{"-n", "2"}, func(c *Command) error { return c.NoZero("n") }, ""},
	} {
		err := tc.check(command(t, tc.args...))
		if (tc.want == "") != (err == nil) || err != nil && !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("step %d: %q: %v; want %q", i, tc.args, err, tc.want)
		}
	}
	if c := command(t, "-n", "0"); !c.Given("n") || c.Given("a") {
		t.Errorf("Given: n %v, a %v; want true, false", c.Given("n"), c.Given("a"))
	}
}

func TestFail(t *testing.T) {
	errRefused := errors.New("tool: refused")
	for i, tc := range []struct {
		err    error
		status int
		stderr string
	}{
		{nil, ExitOK, ""},
		{errRefused, ExitUsage, "tool cmd: tool: refused\nRun 'tool cmd --help' for usage.\n"},
		{errors.New("tool: broke"), ExitError, "tool cmd: tool: broke\n"},
	} {
		var errOut bytes.Buffer
		c := command(t)
		c.Stderr = &errOut
		if status := c.Fail(tc.err, errRefused); status != tc.status || errOut.String() != tc.stderr {
			t.Errorf("step %d: Fail(%v): %d, %q; want %d, %q", i, tc.err, status, errOut.String(), tc.status, tc.stderr)
		}
	}
}

func TestValues(t *testing.T) {
	var u Uint32 = 1
	for i, tc := range []struct {
		v    string
		want string // the value after, or the error
	}{
		{"4294967295", "4294967295"}, {"0", "0"}, {"4294967296", "want an integer from 0 to 4294967295"}, {"-1", "want an integer"}, {"x", "want an integer"},
	} {
		if err := u.Set(tc.v); err != nil && !strings.HasPrefix(err.Error(), tc.want) || err == nil && u.String() != tc.want {
			t.Errorf("step %d: Uint32.Set(%q): %v, %s; want %s", i, tc.v, err, u.String(), tc.want)
		}
	}
	ints := []int{0}
	l := IntList{Ints: &ints, Want: "sizes from 0 to 9"}
	if err := l.Set("1, 2,3"); err != nil || l.String() != "1,2,3" {
		t.Errorf("IntList.Set(1, 2,3): %v, %s; want 1,2,3", err, l.String())
	}
	if err := l.Set("1,x"); err == nil || err.Error() != "want comma-separated sizes from 0 to 9" || l.String() != "1,2,3" {
		t.Errorf("IntList.Set(1,x): %v, %s; want the error and the list untouched", err, l.String())
	}
	if (IntList{}).String() != "" {
		t.Error("the zero IntList, which flag.PrintDefaults makes, does not print empty")
	}
	for i, tc := range []struct {
		s        string
		from, to uint32
		err      bool
	}{
		{"1-1000", 1, 1000, false}, {"7-3", 7, 3, false}, {"0-4294967295", 0, 4294967295, false},
		{"5", 0, 0, true}, {"1-x", 0, 0, true}, {"-1-2", 0, 0, true}, {"1-4294967296", 0, 0, true},
	} {
		from, to, err := ParseRange("--seeds", tc.s)
		if from != tc.from || to != tc.to || (err != nil) != tc.err || err != nil && !strings.HasPrefix(err.Error(), `--seeds "`+tc.s+`": want A-B`) {
			t.Errorf("step %d: ParseRange(%q) = %d, %d, %v", i, tc.s, from, to, err)
		}
	}
}

func TestNewLogger(t *testing.T) {
	var b bytes.Buffer
	for i, tc := range []struct {
		format, level string
		want          string // in the line logged at warn, or the error
	}{
		{"text", "info", "level=WARN msg=w"}, {"json", "warn", `"level":"WARN","msg":"w"`}, {"text", "error", ""},
		{"xml", "info", `--log-format "xml": want text or json`}, {"text", "loud", `--log-level "loud": want debug, info, warn or error`},
	} {
		b.Reset()
		l, err := NewLogger(&b, tc.format, tc.level)
		if err == nil {
			l.Warn("w")
		}
		if got := b.String(); err != nil && err.Error() != tc.want || err == nil && (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) && err == nil {
			t.Errorf("step %d: NewLogger(%s, %s): %v, logged %q; want %q", i, tc.format, tc.level, err, got, tc.want)
		}
	}
}

func TestStringsAndList(t *testing.T) {
	var hosts Strings
	for _, v := range []string{"a", "b,c"} {
		if err := hosts.Set(v); err != nil {
			t.Fatalf("Strings.Set(%q): %v", v, err)
		}
	}
	if !slices.Equal(hosts, Strings{"a", "b,c"}) || hosts.String() != "a,b,c" {
		t.Errorf("Strings after a and b,c: %q, %q; want [a b,c] and a,b,c", []string(hosts), hosts.String())
	}
	for i, tc := range []struct {
		v    string
		want []string // nil: refused, the list untouched
	}{
		{"a:1", []string{"a:1"}}, {" a:1 , b:2,,", []string{"a:1", "b:2"}}, {",", nil}, {" ", nil}, {"", nil},
	} {
		l := List{"before"}
		err := l.Set(tc.v)
		switch {
		case tc.want == nil && (err == nil || !strings.HasPrefix(err.Error(), "empty: want one item or more") || !slices.Equal(l, List{"before"})):
			t.Errorf("step %d: List.Set(%q): %v, %q; want a refusal and the list untouched", i, tc.v, err, []string(l))
		case tc.want != nil && (err != nil || !slices.Equal(l, List(tc.want))):
			t.Errorf("step %d: List.Set(%q): %v, %q; want %q", i, tc.v, err, []string(l), tc.want)
		}
	}
}

func TestOpen(t *testing.T) {
	c := command(t)
	c.Stdin = strings.NewReader("from stdin")
	in, title, err := c.Open("-")
	if err != nil || title != "standard input" {
		t.Fatalf("Open(-): %q, %v; want standard input", title, err)
	}
	if b, _ := io.ReadAll(in); string(b) != "from stdin" || in.Close() != nil {
		t.Errorf("Open(-) read %q; want what Stdin holds, and a Close that does nothing", b)
	}
	path := filepath.Join(t.TempDir(), "f")
	os.WriteFile(path, []byte("from a file"), 0o600) //nolint:errcheck
	if in, title, err = c.Open(path); err != nil || title != path {
		t.Fatalf("Open(%s): %q, %v", path, title, err)
	}
	b, _ := io.ReadAll(in)
	if in.Close(); string(b) != "from a file" {
		t.Errorf("Open(%s) read %q", path, b)
	}
	if _, _, err := c.Open(path + ".none"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing file: %v; want os.ErrNotExist", err)
	}
}

func TestOptional(t *testing.T) {
	var rate *float64
	var mode *string
	c := command(t)
	c.Var(Optional[float64]{&rate}, "rate", "")
	c.Var(Optional[string]{&mode}, "mode", "")
	if status, ok := c.ParseFlags([]string{"-rate", "0"}); !ok || rate == nil || *rate != 0 || mode != nil {
		t.Fatalf("-rate 0: %d, rate %v, mode %v; want rate 0 and mode left nil", status, rate, mode)
	}
	if err := c.Set("mode", ""); err != nil || mode == nil || *mode != "" {
		t.Errorf("-mode '': %v, %v; want an empty mode given", err, mode)
	}
	if err := c.Set("rate", "x"); err == nil || err.Error() != "parse error" || *rate != 0 {
		t.Errorf("-rate x: %v, %v; want a parse error and the rate untouched", err, *rate)
	}
	if s := (Optional[float64]{&rate}).String(); s != "0" || (Optional[string]{}).String() != "" {
		t.Errorf("String: %q, and the zero value's %q; want 0 and empty", s, Optional[string]{}.String())
	}
}
