// Package conventions holds no code: its test checks, as part of make
// test, the conventions of the repository that a reviewer would otherwise
// check by hand. Every package says what it is for in a package comment,
// and every public package (not internal, not a command) shows its use in
// a runnable example: an Example function with an // Output: comment, which
// go test runs and checks. A command only parses flags and wires: no
// function of one spans more than a screen (maxCommandFunc lines). Only
// tests import a test harness (assign/assigntest, quota/servicetest) or
// the quota's test helpers.
// The models and pure cores (the Makefile's
// BOUNDED) neither read the wall clock nor draw from a global random
// source, outside a short list of thin runners. Two documents keep their
// shape: the README stays a front page, and docs/benchmarks.md keeps its
// dates in its tables (the prose says what is true now; git the history).
package conventions
