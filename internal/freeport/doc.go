// Package freeport hands out free loopback addresses for processes that
// bind them later: a test's or a benchmark's cluster, whose members are
// given each other's addresses before they listen, and listen again on
// the same one after a restart.
//
// An address from the kernel's ephemeral port range — what listening on
// port 0 gives — may meanwhile become the local end of any outgoing
// connection on the machine, and a busy machine makes many: a
// coordinator then fails to bind ("address already in use"), seconds
// after its address was chosen. Addr picks below that range, at random,
// checks that the port is free, and never hands a port out twice in one
// process.
package freeport
