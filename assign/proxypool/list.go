package proxypool

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/afloat/afloat/assign"
)

// maxListLine is the longest line ParseList reads; maxListLines the most
// lines.
const (
	maxListLine  = 2048
	maxListLines = 100000
)

// lineError is a line of a proxy list that was refused. The rest of the
// list is still read.
type lineError struct {
	line int    // from 1
	text string // the line, clipped
	err  error
}

func (e lineError) Error() string { return fmt.Sprintf("line %d: %q: %v", e.line, e.text, e.err) }
func (e lineError) Unwrap() error { return e.err }

// ParseList reads candidate proxies, one a line: host:port (taken as
// http://host:port) or a URL http://, https:// or socks5:// with a host and
// a port, and optionally user:password@. Blank lines and lines starting
// with # are skipped; whitespace around a line is trimmed; a repeated proxy
// is kept once. Bad lines do not stop the reading: each comes back as an
// error that names its number and wraps assign.ErrInvalid. The error is
// for the reader failing, the list being longer than 100,000 lines (or a
// line than 2,048 bytes), or holding no proxy (assign.ErrInvalid: empty,
// or every line bad — a wrong file, not a list with nothing to check; the
// bad lines still come back).
func ParseList(r io.Reader) (proxies []*url.URL, bad []error, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxListLine+1)
	var (
		out  []*url.URL
		seen = map[string]bool{}
		n    int
	)
	for sc.Scan() {
		n++
		if n > maxListLines {
			return out, bad, fmt.Errorf("%w: proxy list: more than %d lines", assign.ErrInvalid, maxListLines)
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		u, err := parseProxy(line)
		if err != nil {
			bad = append(bad, lineError{line: n, text: clip(line), err: err})
			continue
		}
		if key := u.String(); !seen[key] {
			seen[key] = true
			out = append(out, u)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return out, bad, fmt.Errorf("%w: proxy list: line %d is longer than %d bytes", assign.ErrInvalid, n+1, maxListLine)
		}
		return out, bad, fmt.Errorf("proxypool: reading the proxy list: %w", err)
	}
	switch {
	case len(out) > 0:
		return out, bad, nil
	case len(bad) == 0:
		return nil, nil, fmt.Errorf("%w: proxy list: no proxy line: want one host:port or URL a line", assign.ErrInvalid)
	case len(bad) == 1:
		return nil, bad, fmt.Errorf("%w: proxy list: no valid proxy line: 1 bad line", assign.ErrInvalid)
	}
	return nil, bad, fmt.Errorf("%w: proxy list: no valid proxy line: %d bad lines", assign.ErrInvalid, len(bad))
}

// parseProxy reads one proxy: host:port or scheme://[user:pass@]host:port
// with scheme http, https or socks5, and no path, query or fragment.
func parseProxy(s string) (*url.URL, error) {
	if s == "" || len(s) > maxListLine {
		return nil, fmt.Errorf("%w: proxy: want host:port or a URL of 1 to %d bytes", assign.ErrInvalid, maxListLine)
	}
	raw := s
	if !strings.Contains(s, "://") {
		raw = "http://" + s
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: proxy: not a URL or host:port", assign.ErrInvalid)
	}
	switch u.Scheme {
	case "http", "https", "socks5":
	default:
		return nil, fmt.Errorf("%w: proxy: scheme %q: want http, https or socks5", assign.ErrInvalid, clip(u.Scheme))
	}
	if u.Opaque != "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return nil, fmt.Errorf("%w: proxy: want no path, query or fragment", assign.ErrInvalid)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return nil, fmt.Errorf("%w: proxy: no host", assign.ErrInvalid)
	}
	if strings.ContainsAny(host, " \t") || (strings.Contains(host, ":") && net.ParseIP(host) == nil) {
		return nil, fmt.Errorf("%w: proxy: host %q is not a name or an IP address", assign.ErrInvalid, clip(host))
	}
	if port == "" {
		return nil, fmt.Errorf("%w: proxy: no port: want host:port", assign.ErrInvalid)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return nil, fmt.Errorf("%w: proxy: port %q: want 1 to 65535", assign.ErrInvalid, clip(port))
	}
	return &url.URL{Scheme: u.Scheme, User: u.User, Host: net.JoinHostPort(host, strconv.Itoa(p))}, nil
}

// memberName is a proxy's name in the pool: its URL without the password,
// so that the pool, the console and the logs never show credentials.
func memberName(u *url.URL) string {
	v := *u
	if v.User != nil {
		v.User = url.User(v.User.Username())
	}
	return v.String()
}

// clip shortens a value quoted in an error message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
