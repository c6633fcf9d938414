package scale

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// freeAddr is a free loopback address below the kernel's ephemeral port
// range. The processes bind it later, and again after a restart; a port
// of the ephemeral range (what listening on port 0 gives) may meanwhile
// become the local end of an outgoing connection, and with tens of
// thousands of renewals a second many are. Ports are random, checked
// free, and never handed out twice by one process.
func freeAddr() (string, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	lo, hi := 20000, ephemeralLow()-1
	for range 1000 {
		port := lo + rand.IntN(hi-lo+1)
		if portsUsed[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		portsUsed[port] = true
		return l.Addr().String(), nil
	}
	return "", fmt.Errorf("scale: no free loopback port below the ephemeral range")
}

var (
	portsMu   sync.Mutex
	portsUsed = map[int]bool{}
)

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default 32768 where it cannot be read, or where it leaves too little
// room below it).
func ephemeralLow() int {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 24000 {
				return n
			}
		}
	}
	return 32768
}
