package assign

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// MaxListLine is the longest line ParseProxyList reads; MaxListLines the
// most lines.
const (
	MaxListLine  = 2048
	MaxListLines = 100000
)

// LineError is a line of a proxy list that was refused. The rest of the
// list is still read.
type LineError struct {
	Line int    // from 1
	Text string // the line, clipped
	Err  error
}

func (e LineError) Error() string { return fmt.Sprintf("line %d: %q: %v", e.Line, e.Text, e.Err) }

// ParseProxyList reads candidate proxies, one a line: host:port (taken as
// http://host:port) or a URL http://, https:// or socks5:// with a host and
// a port, and optionally user:password@. Blank lines and lines starting
// with # are skipped; whitespace around a line is trimmed; a repeated proxy
// is kept once. Bad lines do not stop the reading: each is reported with
// its line number. The error is for the reader failing, the list being
// too long, or holding no proxy (ErrInvalid: empty, or every line bad —
// a wrong file, not a list with nothing to check; the bad lines still
// come back).
func ParseProxyList(r io.Reader) ([]*url.URL, []LineError, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxListLine+1)
	var (
		out  []*url.URL
		bad  []LineError
		seen = map[string]bool{}
		n    int
	)
	for sc.Scan() {
		n++
		if n > MaxListLines {
			return out, bad, fmt.Errorf("%w: proxy list: more than %d lines", ErrInvalid, MaxListLines)
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		u, err := ParseProxy(line)
		if err != nil {
			bad = append(bad, LineError{Line: n, Text: clip(line), Err: err})
			continue
		}
		if key := u.String(); !seen[key] {
			seen[key] = true
			out = append(out, u)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return out, bad, fmt.Errorf("%w: proxy list: line %d is longer than %d bytes", ErrInvalid, n+1, MaxListLine)
		}
		return out, bad, fmt.Errorf("assign: reading the proxy list: %w", err)
	}
	switch {
	case len(out) > 0:
		return out, bad, nil
	case len(bad) == 0:
		return nil, nil, fmt.Errorf("%w: proxy list: no proxy line: want one host:port or URL a line", ErrInvalid)
	case len(bad) == 1:
		return nil, bad, fmt.Errorf("%w: proxy list: no valid proxy line: 1 bad line", ErrInvalid)
	}
	return nil, bad, fmt.Errorf("%w: proxy list: no valid proxy line: %d bad lines", ErrInvalid, len(bad))
}

// ParseProxy reads one proxy: host:port or scheme://[user:pass@]host:port
// with scheme http, https or socks5, and no path, query or fragment.
func ParseProxy(s string) (*url.URL, error) {
	if s == "" || len(s) > MaxListLine {
		return nil, fmt.Errorf("%w: proxy: want host:port or a URL of 1 to %d bytes", ErrInvalid, MaxListLine)
	}
	raw := s
	if !strings.Contains(s, "://") {
		raw = "http://" + s
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: proxy: not a URL or host:port", ErrInvalid)
	}
	switch u.Scheme {
	case "http", "https", "socks5":
	default:
		return nil, fmt.Errorf("%w: proxy: scheme %q: want http, https or socks5", ErrInvalid, clip(u.Scheme))
	}
	if u.Opaque != "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return nil, fmt.Errorf("%w: proxy: want no path, query or fragment", ErrInvalid)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return nil, fmt.Errorf("%w: proxy: no host", ErrInvalid)
	}
	if strings.ContainsAny(host, " \t") || (strings.Contains(host, ":") && net.ParseIP(host) == nil) {
		return nil, fmt.Errorf("%w: proxy: host %q is not a name or an IP address", ErrInvalid, clip(host))
	}
	if port == "" {
		return nil, fmt.Errorf("%w: proxy: no port: want host:port", ErrInvalid)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return nil, fmt.Errorf("%w: proxy: port %q: want 1 to 65535", ErrInvalid, clip(port))
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
