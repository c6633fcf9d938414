package remote

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/afloat/afloat/internal/redact"
)

// ErrEndpoint: an endpoint that is not host:port or an http(s) base URL
// with a port from 1 to 65535, or no endpoint at all.
var ErrEndpoint = errors.New("remote: invalid endpoint")

// ParseEndpoints checks the base URLs of a service's members, as a
// coordinator's regions (ClientConfig.Endpoints) or an etcd cluster's
// clients take them, and returns them in one form: each is host:port
// (read as http://host:port) or http(s)://host:port, with a port from 1
// to 65535, and comes back as http(s)://host:port without a trailing
// slash. At least one is required. Errors wrap ErrEndpoint and name field
// (the flag or the option that gave them, such as --coordinator) and the
// endpoint, its credentials hidden. It is safe for concurrent use.
func ParseEndpoints(field string, endpoints []string) ([]string, error) {
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("%w: %s: empty: want at least one host:port", ErrEndpoint, field)
	}
	out := make([]string, len(endpoints))
	for i, e := range endpoints {
		s := strings.TrimSpace(e)
		if !strings.Contains(s, "://") {
			s = "http://" + s
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%w: %s: %q: want host:port or http(s)://host:port", ErrEndpoint, field, redact.URL(e))
		}
		_, port, err := net.SplitHostPort(u.Host)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%w: %s: %q: want a port from 1 to 65535", ErrEndpoint, field, redact.URL(s))
		}
		out[i] = strings.TrimSuffix(s, "/")
	}
	return out, nil
}

// ParseEndpointsTLS is ParseEndpoints for a client that speaks TLS to
// the service (its CA or a client certificate given): host:port reads as
// https://host:port, and an http:// endpoint is refused, since the
// client's credentials would cross the network in clear. Errors wrap
// ErrEndpoint and name field.
func ParseEndpointsTLS(field string, endpoints []string) ([]string, error) {
	in := make([]string, len(endpoints))
	for i, e := range endpoints {
		s := strings.TrimSpace(e)
		if strings.HasPrefix(strings.ToLower(s), "http://") {
			return nil, fmt.Errorf("%w: %s: %q: TLS is configured (--ca, --client-cert): want https://host:port, or host:port", ErrEndpoint, field, redact.URL(e))
		}
		if !strings.Contains(s, "://") {
			s = "https://" + s
		}
		in[i] = s
	}
	return ParseEndpoints(field, in)
}
