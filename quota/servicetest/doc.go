// Package servicetest runs a quota cluster inside a test: an embedded
// etcd member, coordinator replicas (quota/coordinator/replica) and
// region agents (quota/agent), each on a free loopback port, with their
// data directories and event logs in the test's temporary directory, all
// stopped by the test's cleanup. It is for tests only, as net/http's
// httptest is: internal/conventions checks that no package's own code
// imports it.
//
//	c := servicetest.New(t, configYAML)
//	coord := c.Coordinator(replica.Options{})       // on c.Etcd(), started on first need
//	eu := c.Agent(agent.Options{Name: "eu"}, nil)  // renewing through every coordinator
//	resp, err := http.Post(eu.URL+"/v1/allow", "application/json", body)
//	...
//	load := eu.Load("acme", 5)                    // requests of 5 tokens every 2 ms or so
//	...
//	load.Stop()
//	coord.Stop()
//	report, events := c.Check()                   // the merged event logs, checked
//
// The embedded etcd member needs a binary built with -tags embedetcd; a
// test that asks for it in another build is skipped. A test of an agent
// alone needs none: MemoryCoordinator leases from memory, and
// DownCoordinator answers every call 503. CoordinatorRefused runs a
// replica that must not serve, and returns why.
package servicetest
