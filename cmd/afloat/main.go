// Command afloat is the one binary of the afloat toolkit: the web
// console and its labs, the on-call simulator's CLI, the overload and
// assignment tools, and the global quota's processes and checks.
//
// Every subcommand parses its flags here and hands a validated
// configuration to its package; nothing here models anything. The
// commands are listed in one table, in commands.go; the machinery that
// dispatches, prints help and refuses command lines is internal/cli's.
package main

import (
	"os"

	"github.com/afloat/afloat/overload/live"
)

func main() {
	// afloat bench bulkhead runs its server as this same binary in a child
	// process: become that server if asked to.
	live.ServeIfChild()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
