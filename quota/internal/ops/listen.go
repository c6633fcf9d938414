package ops

import (
	"fmt"
	"net"
	"strconv"
)

// CheckListen refuses a listen address whose port is not 0 to 65535 (0:
// any free port) or a service name, naming field (--listen): such a port
// would otherwise fail only once the process listens, after it has
// started. The form (host:port) is net.Listen's to refuse. The message
// shows the address as given: a listen address holds no credentials.
func CheckListen(field, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil // net.Listen names it
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		if _, err := net.LookupPort("tcp", port); err == nil {
			return nil // a service name, such as http
		}
	}
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%s %q: port %s: want 0 to 65535 (0: any free port)", field, addr, port)
	}
	return nil
}
