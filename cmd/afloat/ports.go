package main

import (
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/afloat/afloat/assign"
)

// Ports out of range pass the packages' checks of form (host:port, a
// redis:// or http:// URL) and used to fail only at listen or dial time,
// exit 1; these refuse them on the command line, exit 2. Messages show the
// port, not the URL, which may hold a password.

// checkListenAddr refuses a listen address whose port is not a service
// name or 0 to 65535 (0: any free port). The form is web.Config's to check.
func checkListenAddr(flagName, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil // web.Config.Validate names it
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

// checkRedisURL refuses a Redis URL that assign.CheckURL refuses (a
// port out of 1 to 65535 among them), naming the flag.
func checkRedisURL(flagName, redisURL string) error {
	if err := assign.CheckURL(redisURL); err != nil {
		return fmt.Errorf("%s: %w", flagName, err)
	}
	return nil
}

// checkURLPort refuses an http(s) URL with a port, when it has one, that is
// not 1 to 65535.
func checkURLPort(flagName, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Port() == "" {
		return nil // the form is the package's to check
	}
	if err := checkPort(u.Port(), 1); err != nil {
		return fmt.Errorf("%s: %w", flagName, err)
	}
	return nil
}

func checkPort(port string, least int) error {
	if n, err := strconv.Atoi(port); err != nil || n < least || n > 65535 {
		return fmt.Errorf("port %s: want %d to 65535", port, least)
	}
	return nil
}
