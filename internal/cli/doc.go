// Package cli is the machinery of a command line with subcommands, in the
// shape of the go command's cmd/go/internal/base: a table of entries, one
// per command line, from which the dispatch, the help pages and the
// refusals of a missing or unknown subcommand all follow.
//
// A Program holds the table; Program.Run is main without the process, so
// tests can call it:
//
//	p := &cli.Program{Name: "tool", About: "tool does things.", Commands: []cli.Entry{
//		{Path: "greet", Synopsis: "tool greet [--name NAME]", Summary: "say hello", Run: runGreet},
//	}}
//	os.Exit(p.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
//
// A run function adds its flags to the Command it is given, parses, and
// returns an exit status: ExitOK, ExitError (it failed while running) or
// ExitUsage (the command line was refused). --help prints the entry's
// synopsis, its flags and its notes to standard output, exit 0; a refused
// command line names the problem on standard error, exit 2.
//
// Nothing here is safe for concurrent use by several goroutines at once,
// nor needs to be: a command line runs once.
package cli
