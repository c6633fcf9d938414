// Package assigncli is afloat's assign and proxy commands: the flags of
// each, checked before anything connects, a call into package assign (or
// its proxy pool, or the bench harness), and the tables and JSON the
// commands print. Package main lists the commands and hands each its
// command line:
//
//	{Path: "assign pick", Run: assigncli.Pick, …}
//
// It holds what only the command line needs — its formatters, its refusals
// — so that package assign exports what a program needs.
package assigncli
