package config

import (
	"fmt"
	"net/textproto"
	"strings"
)

// ProxyConfig is the config file's proxy section: how the region agent's
// reverse proxy (--upstream URL) tells whose quota a request spends.
// Routes are tried first, in file order; then, if TenantHeader is set,
// the header. A request neither names is refused with 403, as
// regionhttp.Middleware refuses an unknown tenant; so is a header naming a
// tenant the region does not serve.
//
//	proxy:
//	  routes:
//	    - {host: api.acme.example, path_prefix: /search, tenant: acme, endpoint: /search}
//	    - {host: api.acme.example, tenant: acme}
//	  tenant_header: X-Tenant   # only behind a front that sets it
type ProxyConfig struct {
	// TenantHeader, if set, names the header that carries the tenant.
	// Any client can state any name in a header: set it only when every
	// request reaches the agent through a front (a gateway, a mesh) that
	// authenticates the client and sets the header itself, overwriting
	// what the client sent.
	TenantHeader string `yaml:"tenant_header"`
	// Routes map hosts and paths to tenants; at most 10000.
	Routes []ProxyRoute `yaml:"routes"`
}

// ProxyRoute maps requests to a tenant.
type ProxyRoute struct {
	// Host matches the request's host, without its port or a final dot,
	// ignoring case; empty matches any.
	Host string `yaml:"host"`
	// PathPrefix matches canonical paths (the agent's: decoded once, cleaned) that start with
	// it, ignoring case; empty matches any. It starts with a slash.
	PathPrefix string `yaml:"path_prefix"`
	// Tenant is whose quota a match spends: one of the config's tenants.
	Tenant string `yaml:"tenant"`
	// Endpoint prices a match (the tenant's costs); empty for the
	// request's canonical path, matched against the costs without regard
	// to case and a trailing slash.
	Endpoint string `yaml:"endpoint"`
}

// Configured says whether the file has a proxy section.
func (p *ProxyConfig) Configured() bool { return p.TenantHeader != "" || len(p.Routes) > 0 }

// validate checks the proxy section; tenants are the config's names.
func (p *ProxyConfig) validate(tenants map[string]int) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: proxy."+format, append([]any{ErrConfigFile}, args...)...)
	}
	if h := p.TenantHeader; h != "" {
		if len(h) > 128 || strings.IndexFunc(h, func(r rune) bool {
			return !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		}) >= 0 {
			return bad("tenant_header %q: want a header name of 1 to 128 letters, digits and dashes", h)
		}
		p.TenantHeader = textproto.CanonicalMIMEHeaderKey(h)
	}
	if len(p.Routes) > MaxRules {
		return bad("routes: %d: want at most %d", len(p.Routes), MaxRules)
	}
	for i := range p.Routes {
		r := &p.Routes[i]
		field := fmt.Sprintf("routes[%d]", i)
		switch {
		case len(r.Host) > 253 || strings.ContainsAny(r.Host, "/:@ \t\n"):
			return bad("%s.host %q: want a host name without port, at most 253 bytes (empty: any)", field, r.Host)
		case r.PathPrefix != "" && (r.PathPrefix[0] != '/' || len(r.PathPrefix) > MaxEnvoyString):
			return bad("%s.path_prefix %q: want a path starting with / of at most %d bytes (empty: any)", field, r.PathPrefix, MaxEnvoyString)
		case len(r.Endpoint) > MaxEnvoyString:
			return bad("%s.endpoint: %d bytes: want at most %d", field, len(r.Endpoint), MaxEnvoyString)
		}
		if _, ok := tenants[r.Tenant]; !ok {
			return bad("%s.tenant %q: not in tenants", field, r.Tenant)
		}
		r.Host = strings.ToLower(r.Host)
	}
	return nil
}
