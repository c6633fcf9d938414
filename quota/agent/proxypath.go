package agent

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/afloat/afloat/quota"
)

// The reverse proxy prices a request by its path, and the upstream serves
// it by its path: the two must read the same path, or a request priced as
// one endpoint is served as another (//export, /./export, /x/../export and
// /%2Fexport cost 1 token where /export costs 100, and an upstream that
// cleans or decodes the path serves them as /export). So the proxy reads
// the path once, in one canonical form, prices that, and forwards that:
//
//   - percent-escapes are decoded exactly once, and the path is cleaned
//     (path.Clean: no empty, "." or ".." segments), keeping a trailing
//     slash if it had one;
//   - what cannot be read one way only is refused with 400: an encoded
//     slash (%2F — decoded, it would move a segment boundary the
//     upstream may or may not see), a backslash, raw or encoded (some
//     servers take it for a slash), a semicolon, raw or encoded (servers
//     that take path parameters drop what follows it: /export;x is
//     /export to them), a NUL or another control character, a path that
//     does not start with a slash;
//   - routes (path_prefix) and the tenant's costs match the canonical
//     path without regard to case and to a trailing slash: /EXPORT and
//     /export/ cost what /export costs, whatever the upstream makes of
//     case, and where two cost keys differ only so, the higher applies;
//   - the upstream gets the canonical path, escaped as Go escapes a path
//     (net/url), with its case as sent.
//
// FuzzCanonicalPath holds it to this: no panic; a canonical path is its
// own canonical form; what the upstream decodes is what was priced.

// errPath: a proxied request's path the proxy will not price.
var errPath = errors.New("quota region: path")

// canonicalPath is the path the proxy prices and forwards, from a
// request's escaped path (url.URL.EscapedPath).
func canonicalPath(escaped string) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w %s: %s", errPath, clipPath(escaped), why)
	}
	if escaped == "" {
		return "/", nil // an absolute-form request for http://host
	}
	if escaped[0] != '/' {
		return "", bad("want a path starting with /")
	}
	lower := strings.ToLower(escaped)
	switch {
	case strings.Contains(lower, "%2f"):
		return "", bad("an encoded slash (%2F): send the path with its slashes, or escape a literal %2F in a segment as %252F")
	case strings.Contains(lower, "%5c") || strings.Contains(escaped, `\`):
		return "", bad("a backslash, which some servers read as a slash")
	case strings.Contains(lower, "%3b") || strings.Contains(escaped, ";"):
		return "", bad("a semicolon: servers that take path parameters drop what follows it")
	}
	dec, err := url.PathUnescape(escaped)
	if err != nil {
		return "", bad("malformed percent-encoding")
	}
	if strings.IndexFunc(dec, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return "", bad("a control character")
	}
	c := path.Clean(dec)
	if strings.HasSuffix(dec, "/") && c != "/" {
		c += "/"
	}
	return c, nil
}

// forwardedPath is the path an upstream reads from a request the proxy
// sends with path p: net/url escapes it, the upstream decodes it once.
func forwardedPath(p string) (string, error) {
	return url.PathUnescape((&url.URL{Path: p}).EscapedPath())
}

// foldPath is the form in which routes and costs match a canonical path:
// case folded (as strings.EqualFold folds), no trailing slash.
func foldPath(p string) string {
	f := strings.ToLower(strings.ToUpper(p))
	if len(f) > 1 {
		f = strings.TrimSuffix(f, "/")
	}
	return f
}

// hasPathPrefix says whether canonical path p starts with prefix,
// ignoring case.
func hasPathPrefix(p, prefix string) bool {
	fold := func(s string) string { return strings.ToLower(strings.ToUpper(s)) }
	return strings.HasPrefix(fold(p), fold(prefix))
}

// pathCosts indexes each tenant's costs by folded endpoint, for the
// proxy: built when a tenant's costs are first priced and again when they
// change (a new map: the agent replaces its tenants whole).
type pathCosts struct {
	m sync.Map // tenant → *foldedCosts
}

type foldedCosts struct {
	// src is the costs map it was built from; held, so that its address
	// is not reused by another map while the index stands.
	src    map[string]int64
	folded map[string]int64
}

// cost is what a request with canonical path p costs tenant t: the
// highest cost among its endpoints that fold to p's form, else the
// tenant's default cost.
func (pc *pathCosts) cost(t quota.Tenant, p string) int64 {
	if len(t.Costs) == 0 {
		return 1
	}
	src := reflect.ValueOf(t.Costs).Pointer()
	fc, _ := pc.m.Load(t.Name)
	if f, ok := fc.(*foldedCosts); !ok || reflect.ValueOf(f.src).Pointer() != src {
		f = &foldedCosts{src: t.Costs, folded: make(map[string]int64, len(t.Costs))}
		for k, c := range t.Costs {
			if k == "" {
				continue
			}
			fk := foldPath(k)
			f.folded[fk] = max(f.folded[fk], c)
		}
		pc.m.Store(t.Name, f)
		fc = f
	}
	if c, ok := fc.(*foldedCosts).folded[foldPath(p)]; ok {
		return c
	}
	return t.Cost("")
}

func clipPath(p string) string {
	if len(p) > 200 {
		p = p[:200] + "…"
	}
	return strconv.Quote(p)
}
