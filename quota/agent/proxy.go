package agent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/afloat/afloat/internal/redact"
	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/eventlog"
	"github.com/afloat/afloat/quota/region/regionhttp"
)

// route says whose quota r spends and which endpoint prices it: tenant
// "" for none; byPath when the endpoint is r's path (canonical: see
// proxypath.go), priced without regard to case and a trailing slash.
func route(p *config.ProxyConfig, r *http.Request) (tenant, endpoint string, byPath bool) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(host, ".") // api.acme.example. is api.acme.example
	for i := range p.Routes {
		rt := &p.Routes[i]
		if (rt.Host == "" || strings.EqualFold(rt.Host, host)) && hasPathPrefix(r.URL.Path, rt.PathPrefix) {
			if rt.Endpoint != "" {
				return rt.Tenant, rt.Endpoint, false
			}
			return rt.Tenant, r.URL.Path, true
		}
	}
	if p.TenantHeader != "" {
		if vs := r.Header[p.TenantHeader]; len(vs) == 1 {
			return vs[0], r.URL.Path, true
		}
	}
	return "", r.URL.Path, true
}

// CheckUpstream parses the reverse proxy's upstream URL: http or https,
// with a host, a port (if any) from 1 to 65535, and no user, query or
// fragment (credentials in a URL end up in logs). Its refusals wrap
// ErrOptions and name --upstream.
func CheckUpstream(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	bad := func(why string) error {
		// Redacted: a password in the URL's user info, query or fragment
		// stays out of the message.
		return fmt.Errorf("%w: --upstream %q: %s", ErrOptions, redact.URL(raw), why)
	}
	switch {
	case raw == "":
		return nil, fmt.Errorf("%w: --upstream: empty: want an http(s)://host[:port] URL", ErrOptions)
	case err != nil:
		// url's errors quote the URL, password and all.
		return nil, fmt.Errorf("%w: --upstream: not a URL: want http(s)://host[:port]", ErrOptions)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, bad("scheme " + strconv.Quote(u.Scheme) + ": want http or https")
	case u.Host == "" || u.Hostname() == "":
		return nil, bad("no host: want http(s)://host[:port]")
	case u.User != nil:
		return nil, bad("user info: give credentials to the upstream another way")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, bad("a query or fragment: want a base URL")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, bad("port " + p + ": want 1 to 65535")
		}
	}
	return u, nil
}

// ProxyHandler returns the agent's reverse proxy to upstream: each
// request's path is made canonical (proxypath.go: decoded once, cleaned;
// one it cannot read one way only gets 400), then mapped to a tenant and
// an endpoint by the config's proxy section and spends the endpoint's
// cost from the region's limiter
// (regionhttp.Middleware); admitted requests go to upstream, with
// X-Forwarded-For, -Host and -Proto set; refused ones get 429 Too Many
// Requests with Retry-After in whole seconds, rounded up, and a one-line
// body, or, costing more than the tenant's quota can ever hold here, 413
// without Retry-After; requests without a tenant of this region, 403. An upstream that
// cannot be reached gives 502. Run serves it on Options.ProxyListen
// when Options.Upstream is set. Safe for concurrent use.
func (a *Agent) ProxyHandler(upstream string) (http.Handler, error) {
	u, err := CheckUpstream(upstream)
	if err != nil {
		return nil, err
	}
	p := &a.o.Config.Proxy
	if !p.Configured() {
		return nil, fmt.Errorf("%w: --upstream: the config has no proxy section: routes or tenant_header (docs/quota/config.md, \"proxy\")", ErrOptions)
	}
	log := a.o.Logger
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = time.Minute
	tr.MaxIdleConnsPerHost = 256
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
		},
		Transport: tr,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.Warn("quota region: upstream", "host", u.Host, "path", r.URL.Path, "err", err)
			http.Error(w, "quota region: the upstream did not answer", http.StatusBadGateway)
		},
	}
	var costs pathCosts
	cost := func(r *http.Request) (string, int64) {
		t, ep, byPath := route(p, r)
		tn, _ := a.tenant(t)
		if byPath {
			return t, costs.cost(tn, ep)
		}
		return t, tn.Cost(ep)
	}
	mw, err := regionhttp.Middleware(a.lim, func(r *http.Request) string {
		t, _, _ := route(p, r)
		return t
	}, regionhttp.WithNow(a.now), regionhttp.WithCost(func(r *http.Request) int64 {
		_, c := cost(r)
		return c
	}))
	if err != nil {
		return nil, err
	}
	// The event log gets the proxy's decisions as it gets the decision
	// API's: an admission when the middleware passes a request on; a
	// refusal when it does not pass on a request of a tenant it serves.
	inner := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d, _ := r.Context().Value(decisionKey{}).(*decision); d != nil {
			d.admitted = true
			a.events.Write(&eventlog.Event{T: a.unix(d.at), Kind: eventlog.Admit, Tenant: d.tenant, Region: a.o.Name, N: d.cost})
		}
		rp.ServeHTTP(w, r)
	}))
	if a.o.EventLog != "" {
		logged := inner
		inner = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d := &decision{at: a.now()}
			d.tenant, d.cost = cost(r)
			logged.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), decisionKey{}, d)))
			if _, served := a.tenant(d.tenant); served && !d.admitted {
				a.events.Write(&eventlog.Event{T: a.unix(d.at), Kind: eventlog.Reject, Tenant: d.tenant, Region: a.o.Name, N: d.cost})
			}
		})
	}
	// First of all, the path: priced and forwarded in one canonical form
	// (proxypath.go), or refused.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Opaque != "" {
			http.Error(w, "quota region: an opaque request URI: want a path starting with /", http.StatusBadRequest)
			return
		}
		canon, err := canonicalPath(r.URL.EscapedPath())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r = r.WithContext(r.Context())
		u := *r.URL
		u.Path, u.RawPath = canon, ""
		r.URL = &u
		inner.ServeHTTP(w, r)
	}), nil
}

// decision is a proxied request's quota decision, for the event log.
type decision struct {
	tenant   string
	cost     int64
	at       int64
	admitted bool
}

// decisionKey keys a *decision in a proxied request's context.
type decisionKey struct{}
