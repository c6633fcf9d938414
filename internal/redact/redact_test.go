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
		// A password in the query or the fragment, in every spelling: the
		// whole query and fragment go.
		{"redis://127.0.0.1:6379/?password=SECRET", "redis://127.0.0.1:6379/?xxxxx"},
		{"redis://127.0.0.1:6379?password=SECRET", "redis://127.0.0.1:6379?xxxxx"},
		{"redis://h:1/0?db=0&PASSWORD=SECRET", "redis://h:1/0?xxxxx"},
		{"redis://h:1/?%70assword=SECRET", "redis://h:1/?xxxxx"},
		{"redis://h:1/?SECRET", "redis://h:1/?xxxxx"},
		{"redis://h:1/?pass=SEC%zzRET", "redis://h:1/?xxxxx"},
		{"redis://h:1/#password=SECRET", "redis://h:1/#xxxxx"},
		{"redis://:pw@h:1/?password=SECRET#SECRET", "redis://xxxxx@h:1/?xxxxx#xxxxx"},
		{"redis://h:1/?", "redis://h:1/?xxxxx"},
		// Unparsable, with a query: the host is shown only when it stands
		// clear of both.
		{"redis://h:port/?password=SECRET", "redis://h:port/?xxxxx"},
		{"redis://h:port/?password=SEC@RET", "redis://xxxxx"},
		{"redis://:p@ss@h:port/?password=SECRET", "redis://xxxxx@h:port/?xxxxx"},
		{"redis://:p?ss@h:port", "redis://xxxxx"},
		{"redis://h:1/?password=SECRET\n", "redis://h:1/?xxxxx"},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("step %d: URL(%q) = %q, want %q", i, c.in, got, c.want)
		}
	}
}

// FuzzURL checks that no credential survives, whatever the URL: a URL
// net/url parses keeps everything but its user info, its query and its
// fragment, each replaced by Hidden; one it cannot parse shows nothing
// before the last "@" after the scheme, nothing from the first "?" or
// "#" on, and nothing at all after the scheme if a "?" or "#" comes
// before that "@".
func FuzzURL(f *testing.F) {
	for _, s := range []string{"redis://:p@SECRET@host", "redis://u:p@h:1/0", "rediss://:a%2Fb@h", "x://@@@", "redis://:pw@[::1]:6379",
		"redis://h:1/?password=s", "redis://h:x/?password=s@t", "redis://h:1#p", "redis://:p?w@h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := URL(s)
		if u, err := url.Parse(s); err == nil && u.Opaque == "" {
			if u.User == nil && !strings.ContainsAny(s, "?#") {
				if got != s {
					t.Fatalf("URL(%q) = %q, want it unchanged: it has no credentials", s, got)
				}
				return
			}
			g, err := url.Parse(got)
			// (url.URL.String writes a relative path whose first segment
			// holds a colon with "./" before it.)
			if err != nil || g.Host != u.Host || (g.Path != u.Path && g.Path != "./"+u.Path) {
				t.Fatalf("URL(%q) = %q: want the same host and path", s, got)
			}
			if (u.User == nil) != (g.User == nil) || (g.User != nil && g.User.String() != Hidden) {
				t.Fatalf("URL(%q) = %q: want the user info replaced by %s", s, got, Hidden)
			}
			if g.RawQuery != "" && g.RawQuery != Hidden || g.Fragment != "" && g.Fragment != Hidden {
				t.Fatalf("URL(%q) = %q: want the query and the fragment replaced by %s", s, got, Hidden)
			}
			if u.RawQuery != "" && g.RawQuery != Hidden || u.Fragment != "" && g.Fragment != Hidden {
				t.Fatalf("URL(%q) = %q: a query or fragment is left", s, got)
			}
			return
		}
		start := 0
		if i := strings.Index(s, "://"); i >= 0 {
			start = i + 3
		}
		rest := s[start:]
		at, q := strings.LastIndex(rest, "@"), strings.IndexAny(rest, "?#")
		if !strings.HasPrefix(got, s[:start]) {
			t.Fatalf("URL(%q) = %q: the scheme is not kept", s, got)
		}
		shown := got[start:]
		if q >= 0 && at > q {
			if shown != Hidden {
				t.Fatalf("URL(%q) = %q: a query before the last @, yet something shows", s, got)
			}
			return
		}
		// What may show: from the last "@" to the first "?" or "#".
		lo, hi := 0, len(rest)
		if at >= 0 {
			if !strings.HasPrefix(shown, Hidden+"@") {
				t.Fatalf("URL(%q) = %q: what precedes the last @ is not hidden", s, got)
			}
			shown, lo = shown[len(Hidden):], at
		}
		if q >= 0 {
			if !strings.HasSuffix(shown, rest[q:q+1]+Hidden) {
				t.Fatalf("URL(%q) = %q: the query or fragment is not hidden", s, got)
			}
			shown, hi = shown[:len(shown)-1-len(Hidden)], q
		}
		if shown != rest[lo:hi] {
			t.Fatalf("URL(%q) = %q: shows %q, want %q", s, got, shown, rest[lo:hi])
		}
	})
}
