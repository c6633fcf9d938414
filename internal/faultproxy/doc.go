// Package faultproxy is a TCP proxy that a test controls, for failure
// tests of processes that talk over the network: it forwards connections
// from a loopback port to a target, and on command cuts the link (every
// connection dropped, new ones refused at once) or heals it. The quota
// end-to-end test puts one on every link between etcd members,
// coordinators and region agents.
//
//	p, err := faultproxy.New("127.0.0.1:2379") // listens on a free loopback port
//	defer p.Close()
//	dial(p.Addr())
//	p.Cut()  // a partition: connections reset, new ones refused
//	p.Heal()
package faultproxy
