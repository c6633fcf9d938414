// Command afloat is the one binary of the afloat toolkit: the on-call
// simulator's CLI today, the web console and the labs as they land.
//
// Every subcommand parses its flags here and hands a validated
// configuration to its package; nothing here models anything.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // the command failed while running
	exitUsage = 2 // the command line or an input file was refused
)

const usage = `afloat keeps a web service up under load.

Usage:
  afloat <command> [subcommand] [flags]

Commands:
  sim run         play an on-call scenario and print one frame per simulated minute
  sim scenarios   list the scenarios and their briefings
  help            print this help

With no command afloat will serve the web console on 127.0.0.1:8080; the
console is not built yet, so for now it prints this help.
Run 'afloat <command> --help' for a command's flags.
`

// run is main without the process: it returns the exit status, so tests
// can call it.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "sim":
		return runSim(args[1:], stdin, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "afloat: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}
