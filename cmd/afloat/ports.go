package main

import (
	"fmt"
	"net"
	"strconv"
)

// Ports out of range pass the quota service's checks of form (host:port,
// an http:// URL) and used to fail only at listen or dial time, exit 1;
// these refuse them on the command line, exit 2. Messages show the port,
// not the URL, which may hold a password.

// checkListenAddr refuses a listen address whose port is not a service
// name or 0 to 65535 (0: any free port). The form is the service's to
// check.
func checkListenAddr(flagName, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil // the service names it
	}
	if _, err := strconv.Atoi(port); err != nil {
		if _, err := net.LookupPort("tcp", port); err == nil {
			return nil // a service name, such as http
		}
	}
	if err := checkPort(port, 0); err != nil {
		return fmt.Errorf("%s %q: %w (0: any free port)", flagName, addr, err)
	}
	return nil
}

func checkPort(port string, least int) error {
	if n, err := strconv.Atoi(port); err != nil || n < least || n > 65535 {
		return fmt.Errorf("port %s: want %d to 65535", port, least)
	}
	return nil
}
