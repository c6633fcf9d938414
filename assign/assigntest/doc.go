// Package assigntest starts real redis-server processes for the tests of
// package assign and of the packages built on it (the console, the CLI).
//
// Each server listens on its own free loopback port with persistence off,
// never on the 6379 a developer may already run, and stops when the test
// ends. Without redis-server on PATH the test is skipped — unless
// AFLOAT_REQUIRE_REDIS is set, as make test sets it after installing
// Debian's redis-server, so that the suite cannot pass by skipping.
package assigntest
