package hostcheck

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// ErrName: a host name given to New is not one.
var ErrName = errors.New("hostcheck: invalid host name")

// Loopback reports whether a Host header (host or host:port) names the
// loopback interface: localhost and its subdomains, which browsers
// resolve to loopback themselves, never through DNS, and loopback IP
// literals (127.0.0.0/8, [::1]).
func Loopback(hostport string) bool {
	host := hostOf(hostport)
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// ListenLoopback reports whether a listen address (host:port) binds the
// loopback interface only: "localhost" or a loopback IP literal. An empty
// host, 0.0.0.0 and [::] listen on every interface.
func ListenLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// Names is the set of host names a listener answers besides the loopback
// names. The zero value answers loopback names only. It is safe for
// concurrent use once built.
type Names struct {
	names map[string]bool     // lower case, no final dot
	ips   map[netip.Addr]bool // IP literals, unmapped
	list  []string            // as given, for messages
}

// New is the set of loopback names and names: each a DNS name or an IP
// literal (IPv6 with or without brackets), without a port; case and a
// final dot do not matter.
func New(names ...string) (*Names, error) {
	n := &Names{names: map[string]bool{}, ips: map[netip.Addr]bool{}}
	for _, name := range names {
		if err := n.add(name); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func (n *Names) add(name string) error {
	h := strings.TrimSuffix(strings.ToLower(name), ".")
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if ip, err := netip.ParseAddr(h); err == nil {
		n.ips[ip.Unmap()] = true
		n.list = append(n.list, name)
		return nil
	}
	if !validName(h) {
		return fmt.Errorf("%w: %q: want a DNS name or an IP address, without a port", ErrName, name)
	}
	n.names[h] = true
	n.list = append(n.list, name)
	return nil
}

// AddHostPort adds the host of a listen address or of a URL's host:port,
// if it names one host: not an unspecified address (0.0.0.0, [::],
// empty), which stands for every interface rather than a name of the
// server. A loopback name adds nothing: it is answered anyway.
func (n *Names) AddHostPort(hostport string) {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) || Loopback(host) {
		return // every interface; or loopback, answered anyway
	}
	n.add(host) //nolint:errcheck // not a name: nothing to answer to
}

// Allows reports whether a Host header names this server: a loopback
// name, or one of the set's, with or without a port.
func (n *Names) Allows(hostport string) bool {
	if Loopback(hostport) {
		return true
	}
	if n == nil {
		return false
	}
	host := hostOf(hostport)
	if ip, err := netip.ParseAddr(host); err == nil {
		return n.ips[ip.Unmap()]
	}
	return n.names[host]
}

// String lists the names answered, for messages: "localhost, 127.0.0.1,
// [::1]" and the set's.
func (n *Names) String() string {
	s := "localhost, 127.0.0.1, [::1]"
	if n != nil && len(n.list) > 0 {
		s += ", " + strings.Join(n.list, ", ")
	}
	return s
}

// hostOf is a Host header's host: without its port, brackets and final
// dot, in lower case.
func hostOf(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

// validName says whether h is a DNS name: labels of letters, digits,
// hyphens and underscores, 1 to 63 bytes each, 253 in all.
func validName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
				return false
			}
		}
	}
	return true
}
