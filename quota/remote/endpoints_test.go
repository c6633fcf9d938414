package remote_test

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/afloat/afloat/quota/remote"
)

// TestParseEndpoints: host:port is read as http://; each refusal names
// the field, the endpoint (its password hidden) and the allowed form or
// range.
func TestParseEndpoints(t *testing.T) {
	for i, tc := range []struct {
		in   []string
		want []string // or, with err, the message's end
		err  string
	}{
		{[]string{"127.0.0.1:7070"}, []string{"http://127.0.0.1:7070"}, ""},
		{[]string{"https://quota.internal:443/", " [::1]:1 "}, []string{"https://quota.internal:443", "http://[::1]:1"}, ""},
		{[]string{"http://a:65535"}, []string{"http://a:65535"}, ""},
		{nil, nil, `--etcd: empty: want at least one host:port`},
		{[]string{"ftp://a:1"}, nil, `--etcd: "ftp://a:1": want host:port or http(s)://host:port`},
		{[]string{"http://"}, nil, `--etcd: "http://": want host:port or http(s)://host:port`},
		{[]string{""}, nil, `--etcd: "": want host:port or http(s)://host:port`},
		{[]string{"a:1", "127.0.0.1:99999"}, nil, `--etcd: "http://127.0.0.1:99999": want a port from 1 to 65535`},
		{[]string{"a:0"}, nil, `want a port from 1 to 65535`},
		{[]string{"a"}, nil, `--etcd: "http://a": want a port from 1 to 65535`},
		{[]string{"http://u:hunter2@a:99999"}, nil, `"http://xxxxx@a:99999": want a port from 1 to 65535`},
	} {
		got, err := remote.ParseEndpoints("--etcd", tc.in)
		switch {
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("step %d: ParseEndpoints(%q) = %q, %v; want %q", i, tc.in, got, err, tc.want)
		case tc.err != "" && (!errors.Is(err, remote.ErrEndpoint) || !strings.HasSuffix(err.Error(), tc.err) || got != nil):
			t.Errorf("step %d: ParseEndpoints(%q) = %q, %v; want remote.ErrEndpoint ending %q", i, tc.in, got, err, tc.err)
		}
	}
}

// FuzzParseEndpoints: what it accepts is an http(s) base URL with a
// port, which it gives back unchanged when parsed again; what it refuses
// wraps ErrEndpoint and shows no password.
func FuzzParseEndpoints(f *testing.F) {
	for _, s := range []string{"127.0.0.1:7070", "https://h:1/", "ftp://a:1", "http://u:pw@h:99999", "[::1]:80", "a:b:c", "http://%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := remote.ParseEndpoints("f", []string{s})
		if err != nil {
			if !errors.Is(err, remote.ErrEndpoint) || got != nil {
				t.Fatalf("%q: %q, %v", s, got, err)
			}
			if u, perr := url.Parse(s); perr == nil && u.User != nil {
				if p, ok := u.User.Password(); ok && len(p) > 3 && strings.Contains(err.Error(), p) {
					t.Fatalf("%q: the refusal shows the password: %v", s, err)
				}
			}
			return
		}
		u, perr := url.Parse(got[0])
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Port() == "" || strings.HasSuffix(got[0], "/") {
			t.Fatalf("%q: accepted as %q", s, got[0])
		}
		if again, err := remote.ParseEndpoints("f", got); err != nil || again[0] != got[0] {
			t.Fatalf("%q: %q parsed again: %q, %v", s, got[0], again, err)
		}
	})
}
