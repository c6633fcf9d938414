package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ErrNone: no free loopback port was found below the ephemeral range.
var ErrNone = errors.New("freeport: no free loopback port below the ephemeral range")

// minPort is the lowest port Addr picks: above the well-known and most
// registered services' ports.
const minPort = 20000

var (
	mu   sync.Mutex
	used = map[int]bool{}
)

// Addr returns a free loopback address (127.0.0.1:port) below the
// kernel's ephemeral range, not handed out before by this process. Safe
// for concurrent use.
func Addr() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	lo, hi := minPort, ephemeralLow()-1
	for range 1000 {
		port := lo + rand.IntN(hi-lo+1)
		if used[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken: another
		}
		l.Close()
		used[port] = true
		return l.Addr().String(), nil
	}
	return "", ErrNone
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// ip_local_port_range), or 32768, its default, where it cannot be read or
// leaves too little room below it.
func ephemeralLow() int {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > minPort+4000 {
				return n
			}
		}
	}
	return 32768
}
