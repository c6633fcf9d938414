package main

import (
	"io"

	"github.com/afloat/afloat/internal/cli"
)

// command is what a run function here gets: the running cli.Command under
// the short names the run functions use, so that the files on the quota's
// processes, which change with the quota's packages, need not change with
// package cli.
type command struct {
	*cli.Command
	stdin          io.Reader
	stdout, stderr io.Writer
}

// wrap makes a run function of this package a cli.Entry's.
func wrap(run func(c *command, args []string) int) func(*cli.Command, []string) int {
	return func(c *cli.Command, args []string) int {
		return run(&command{c, c.Stdin, c.Stdout, c.Stderr}, args)
	}
}

func (c *command) parse(args []string) (int, bool)               { return c.ParseFlags(args) }
func (c *command) parseArgs(args []string) ([]string, int, bool) { return c.ParseArgs(args) }
func (c *command) given(name string) bool                        { return c.Given(name) }
func (c *command) usage(err error) int                           { return c.Refuse(err) }
func (c *command) failed(err error) int                          { return c.Failed(err) }
func (c *command) fail(err error, refusals ...error) int         { return c.Fail(err, refusals...) }
func (c *command) onlyWith(flag string, others ...string) error  { return c.OnlyWith(flag, others...) }
func (c *command) noZero(names ...string) error                  { return c.NoZero(names...) }
func (c *command) notWith(flag, why string, others ...string) error {
	return c.NotWith(flag, why, others...)
}

const (
	exitOK    = cli.ExitOK
	exitError = cli.ExitError
	exitUsage = cli.ExitUsage
)

var (
	interruptible = cli.Interruptible
	isHelp        = cli.IsHelp
)

// seedFlag is a seed's flag: 0 to 2^32-1.
type seedFlag = cli.Uint32

// parseSeeds reads --seeds A-B.
func parseSeeds(s string) (from, to uint32, err error) { return cli.ParseRange("--seeds", s) }
