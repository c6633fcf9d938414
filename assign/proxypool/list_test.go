package proxypool

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/afloat/afloat/assign"
)

func TestParseList(t *testing.T) {
	list := `# free proxies, checked before use
127.0.0.1:8080
http://127.0.0.1:8081

  socks5://user:secret@[::1]:1080  
https://proxy.example:443/
127.0.0.1:8080
not a proxy
ftp://127.0.0.1:21
127.0.0.1:0
127.0.0.1:99999
http://127.0.0.1:80/path
[::1
`
	got, bad, err := ParseList(strings.NewReader(list))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range got {
		names = append(names, memberName(u))
	}
	if want := "[http://127.0.0.1:8080 http://127.0.0.1:8081 socks5://user@[::1]:1080 https://proxy.example:443]"; fmt.Sprint(names) != want {
		t.Errorf("proxies %v\nwant %s", names, want)
	}
	if got[2].User.String() != "user:secret" {
		t.Errorf("the credentials were lost: %v", got[2].User)
	}
	wantBad := map[int]string{8: "host", 9: "scheme", 10: "port", 11: "port", 12: "path", 13: "URL"}
	if len(bad) != len(wantBad) {
		t.Fatalf("bad lines %v, want lines %v", bad, wantBad)
	}
	for _, err := range bad {
		b := err.(lineError)
		if w, ok := wantBad[b.line]; !ok || !strings.Contains(b.Error(), w) || !errors.Is(b, assign.ErrInvalid) {
			t.Errorf("line %d: %v, want an error about the %s", b.line, b, w)
		}
	}
}

// TestProxyListWithoutProxies: a list in which no line is a proxy — empty,
// blanks and comments, or every line bad — is refused, and the bad lines
// still come back with their numbers.
func TestProxyListWithoutProxies(t *testing.T) {
	for i, tc := range []struct {
		list string
		bad  int
		want string
	}{
		{"", 0, "proxy list: no proxy line: want one host:port or URL a line"},
		{"# none yet\n\n", 0, "no proxy line"},
		{"nonsense\n", 1, "proxy list: no valid proxy line: 1 bad line"},
		{"nonsense\n# a comment\nftp://x:1\n127.0.0.1:99999\n", 3, "no valid proxy line: 3 bad lines"},
	} {
		got, bad, err := ParseList(strings.NewReader(tc.list))
		if len(got) != 0 || len(bad) != tc.bad || !errors.Is(err, assign.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("step %d: %d proxies, %d bad lines, %v; want none, %d and %q", i, len(got), len(bad), err, tc.bad, tc.want)
		}
	}
}

// FuzzParseList: any input is read without panicking; every proxy it
// accepts parses again to itself, and every refused line names its number.
func FuzzParseList(f *testing.F) {
	seed, _ := os.ReadFile("testdata/proxies.txt")
	f.Add(string(seed))
	for _, s := range []string{"127.0.0.1:1", "http://a:b@h:1", "socks5://[::1]:9", "h:0", ":80", "http://[fe80::1%25eth0]:8080", "\xff:1", "# only\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, bad, err := ParseList(strings.NewReader(s)) // on an error, what was read until then
		if err == nil && len(got) == 0 {
			t.Fatalf("%q: a list without a proxy was taken", s)
		}
		lines := strings.Count(s, "\n") + 1
		for _, err := range bad {
			b, ok := err.(lineError)
			if !ok || b.line < 1 || b.line > lines || b.err == nil {
				t.Fatalf("bad line %+v of %d lines", err, lines)
			}
		}
		for _, u := range got {
			again, err := parseProxy(u.String())
			if err != nil || again.String() != u.String() {
				t.Fatalf("%q parsed to %q, which parses to %v %v", s, u, again, err)
			}
			// A name package assign takes as a member: no control
			// character, valid UTF-8, not too long.
			m := memberName(u)
			if len(m) > assign.MaxMemberName || !utf8.ValidString(m) || strings.ContainsFunc(m, func(r rune) bool { return r < ' ' || r == 0x7f }) {
				t.Fatalf("%q gives the member name %q", s, m)
			}
		}
	})
}
