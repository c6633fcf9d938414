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

	"github.com/afloat/afloat/overload/live"
)

func main() {
	// afloat bench bulkhead runs its server as this same binary in a child
	// process: become that server if asked to.
	live.ServeIfChild()
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
  afloat [command] [subcommand] [flags]

Commands:
  serve           serve the web console (the default: afloat with no command
                  serves it on 127.0.0.1:8080)
  sim run         play an on-call scenario and print one frame per simulated minute
  sim scenarios   list the scenarios and their briefings
  lab overload    the overload lab: a server's death after a peak, and the bulkhead
  bench bulkhead  compare overload protections over real HTTP on loopback
  assign          least-used assignment over Redis: add, remove, restore,
                  list, pick, bench
  proxy check     probe candidate proxies from a list (and update a pool)
  quota chaos     the global quota under faults in virtual time, checked
  quota sim       the same run as CSV for plotting; quota check: check a log
  help            print this help

Run 'afloat <command> --help' for a command's flags.
`

// run is main without the process: it returns the exit status, so tests
// can call it.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return runServe(nil, stdout, stderr)
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "sim":
		return runSim(args[1:], stdin, stdout, stderr)
	case "lab":
		return runLab(args[1:], stdout, stderr)
	case "bench":
		return runBench(args[1:], stdout, stderr)
	case "assign":
		return runAssign(args[1:], stdout, stderr)
	case "proxy":
		return runProxy(args[1:], stdin, stdout, stderr)
	case "quota":
		return runQuota(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "afloat: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}
