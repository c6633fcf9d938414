package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestAddr: addresses on loopback, below the ephemeral range, free to
// bind, never the same twice.
func TestAddr(t *testing.T) {
	seen := map[string]bool{}
	low := ephemeralLow()
	for range 200 {
		addr, err := Addr()
		if err != nil {
			t.Fatal(err)
		}
		host, port, err := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(port)
		if err != nil || host != "127.0.0.1" || n < minPort || n >= low {
			t.Fatalf("%s: want 127.0.0.1 and a port from %d to %d", addr, minPort, low-1)
		}
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s: not free: %v", addr, err)
		}
		ln.Close()
	}
}
