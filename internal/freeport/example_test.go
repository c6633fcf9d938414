package freeport_test

import (
	"fmt"
	"net"

	"github.com/afloat/afloat/internal/freeport"
)

// A member of a cluster is given its address before it listens.
func Example() {
	addr, err := freeport.Addr()
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", addr) // later, the process that was given it
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	fmt.Println(host)
	// Output: 127.0.0.1
}
