package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// A Command is a running entry: its flag set, its help and its standard
// streams. Run functions add their flags, then call ParseFlags or
// ParseArgs.
type Command struct {
	*flag.FlagSet
	Stdin          io.Reader
	Stdout, Stderr io.Writer

	prog  string // the program's name, for messages
	entry *Entry
}

// ParseFlags parses args, which must hold flags only. It returns false
// when the command should stop, with the status to exit with: ExitOK after
// printing help to Stdout, ExitUsage after printing a usage error to
// Stderr.
func (c *Command) ParseFlags(args []string) (status int, ok bool) {
	rest, status, ok := c.ParseArgs(args)
	if ok && len(rest) > 0 {
		return c.Refuse(fmt.Errorf("unexpected argument %q", rest[0])), false
	}
	return status, ok
}

// ParseArgs is ParseFlags for commands that take arguments after their
// flags: it returns them.
func (c *Command) ParseArgs(args []string) (rest []string, status int, ok bool) {
	c.SetOutput(io.Discard) // the error is printed below, once
	err := c.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(c.Stdout, "Usage:\n")
		writeIndented(c.Stdout, c.entry.Synopsis)
		fmt.Fprint(c.Stdout, "\nFlags:\n")
		c.SetOutput(c.Stdout)
		c.PrintDefaults()
		if c.entry.Notes != nil {
			c.entry.Notes(c.Stdout)
		}
		return nil, ExitOK, false
	case err != nil:
		return nil, c.Refuse(c.explain(err)), false
	}
	return c.Args(), ExitOK, true
}

// Given reports whether the command line set the flag, to tell a flag
// given its zero value from one left out.
func (c *Command) Given(name string) bool {
	found := false
	c.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// Refuse prints a refused command line and returns ExitUsage.
func (c *Command) Refuse(err error) int {
	fmt.Fprintf(c.Stderr, "%s %s: %v\nRun '%s %s --help' for usage.\n", c.prog, c.Name(), err, c.prog, c.Name())
	return ExitUsage
}

// Failed prints an error met while running and returns ExitError.
func (c *Command) Failed(err error) int {
	fmt.Fprintf(c.Stderr, "%s %s: %v\n", c.prog, c.Name(), err)
	return ExitError
}

// Fail returns ExitOK for nil; else it prints the error: a refusal of the
// input, ExitUsage, when it is one of refusals (errors.Is); else a failure
// while running, ExitError.
func (c *Command) Fail(err error, refusals ...error) int {
	if err == nil {
		return ExitOK
	}
	for _, r := range refusals {
		if errors.Is(err, r) {
			return c.Refuse(err)
		}
	}
	return c.Failed(err)
}

// NotWith refuses each of others given with flag, which makes them moot;
// why ends the message.
func (c *Command) NotWith(flag, why string, others ...string) error {
	for _, o := range others {
		if c.Given(flag) && c.Given(o) {
			return fmt.Errorf("--%s does not go with --%s%s", o, flag, why)
		}
	}
	return nil
}

// OnlyWith refuses each of others given without flag, which they need.
func (c *Command) OnlyWith(flag string, others ...string) error {
	for _, o := range others {
		if !c.Given(flag) && c.Given(o) {
			return fmt.Errorf("--%s only with --%s", o, flag)
		}
	}
	return nil
}

// NoZero refuses an explicit 0 in flags whose package reads 0 as its
// default: typed on a command line, it is a slip, not a request for the
// default.
func (c *Command) NoZero(names ...string) error {
	for _, n := range names {
		if v := c.Lookup(n).Value.String(); c.Given(n) && (v == "0" || v == "0s") {
			return fmt.Errorf("--%s %s: want more than 0; leave it out for the default", n, v)
		}
	}
	return nil
}

// Open opens the input a command line names: the file name, or Stdin for
// "-". It returns the input and what to call it in messages ("standard
// input" for Stdin); closing Stdin's is a no-op.
func (c *Command) Open(name string) (in io.ReadCloser, title string, err error) {
	if name == "-" {
		return io.NopCloser(c.Stdin), "standard input", nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, name, err
	}
	return f, name, nil
}

// Interruptible returns a context that ends at SIGINT or SIGTERM, so that
// a running command stops cleanly on Ctrl-C; stop releases the signals.
func Interruptible() (ctx context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
