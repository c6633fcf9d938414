package ops

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/afloat/afloat/internal/hostcheck"
)

// Every HTTP listener of the quota — the region agent's decision API
// (with /v1/status and /metrics) and the coordinator's API — answers only
// its own host names, as the console does (internal/hostcheck): a page
// on another site that rebinds its name to the agent's address
// (evil.example → 127.0.0.1) could otherwise spend a tenant's tokens and
// read the status and metrics, as same-origin. Its own names are the
// loopback names (localhost, 127.0.0.1, [::1]), the host of --listen
// unless it is every interface (0.0.0.0, [::]), a coordinator's
// --advertise host, and each --host. The reverse proxy (--proxy-listen)
// is not held to it: it serves whatever hosts its routes name.

// HostNames builds a listener's names from --host flags and the addresses
// it listens and is reached at. Its error names --host and wraps
// hostcheck.ErrName; the process's options wrap it in their own.
func HostNames(hosts []string, addrs ...string) (*hostcheck.Names, error) {
	names, err := hostcheck.New(hosts...)
	if err != nil {
		return nil, fmt.Errorf("--host: %w", err)
	}
	for _, a := range addrs {
		names.AddHostPort(a)
	}
	return names, nil
}

// HostGuard answers a request whose Host is not one of names with 421
// Misdirected Request (not 403: a region's client must not take it for a
// refused token), naming the names and the flag that adds one.
func HostGuard(names *hostcheck.Names, who string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !names.Allows(r.Host) {
			host := r.Host
			if len(host) > 100 {
				host = host[:100] + "…"
			}
			HTTPError(w, http.StatusMisdirectedRequest, fmt.Sprintf("%s: host %s: this server answers only to %s "+
				"(a protection against DNS rebinding); add a name with --host NAME", who, strconv.Quote(host), names))
			return
		}
		next.ServeHTTP(w, r)
	})
}
