package redact

import (
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for i, c := range []struct{ in, want string }{
		{"redis://127.0.0.1:6379", "redis://127.0.0.1:6379"},
		{"redis://:pw@127.0.0.1:6379/2", "redis://xxxxx@127.0.0.1:6379/2"},
		{"redis://user:pw@h:1", "redis://xxxxx@h:1"},
		{"redis://justapassword@h:1", "redis://xxxxx@h:1"},
		// The review's leaks: a password holding "@" (net/url refuses
		// it), and one with no port.
		{"redis://:p@SECRET@host", "redis://xxxxx@host"},
		{"redis://:PW@127.0.0.1", "redis://xxxxx@127.0.0.1"},
		{"redis://:p/w@host:1/0", "redis://xxxxx@host:1/0"},
		{"redis://:p%zz@host:1", "redis://xxxxx@host:1"},
		{"not a url", "not a url"},
		{"", ""},
		{"user:pw@host", "xxxxx@host"},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("step %d: URL(%q) = %q, want %q", i, c.in, got, c.want)
		}
	}
}

// FuzzURL checks that no credential survives, whatever the URL: a URL
// net/url parses keeps everything but its user info; one it cannot parse
// loses everything between the scheme and the last "@".
func FuzzURL(f *testing.F) {
	for _, s := range []string{"redis://:p@SECRET@host", "redis://u:p@h:1/0", "rediss://:a%2Fb@h", "x://@@@", "redis://:pw@[::1]:6379"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := URL(s)
		if u, err := url.Parse(s); err == nil && u.Opaque == "" {
			// Parsed: the user info, and only it, is replaced.
			if u.User == nil {
				if got != s {
					t.Fatalf("URL(%q) = %q, want it unchanged: it has no credentials", s, got)
				}
				return
			}
			g, err := url.Parse(got)
			if err != nil || g.User == nil || g.User.String() != Hidden || g.Host != u.Host || g.Path != u.Path {
				t.Fatalf("URL(%q) = %q: want the same URL with the user info replaced by %s", s, got, Hidden)
			}
			return
		}
		start := 0
		if i := strings.Index(s, "://"); i >= 0 {
			start = i + 3
		}
		at := strings.LastIndex(s[start:], "@")
		if at <= 0 {
			return
		}
		// Whatever stood between the scheme and the last "@" is gone:
		// the rest of the URL is kept as it was.
		if want := s[:start] + Hidden + s[start+at:]; got != want {
			t.Fatalf("URL(%q) = %q, want %q", s, got, want)
		}
	})
}
