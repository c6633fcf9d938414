package redisurl

import (
	"errors"
	"strings"
	"testing"
)

var errBad = errors.New("assign: invalid argument")

// TestOptionsHidesPasswords: no refusal of a Redis URL quotes its
// password, however the URL is malformed (the review found the whole
// password in the error for a URL without a port, and the tail of one
// holding "@" on the console's page).
func TestOptionsHidesPasswords(t *testing.T) {
	for i, c := range []struct{ url, secret string }{
		{"redis://:PW-no-port@127.0.0.1", "PW-no-port"},
		{"redis://:p@SECRET@host", "SECRET"},
		{"redis://:hunter2@host:6379?db=1", "hunter2"},
		{"redis://:hunter2@host:6379/x", "hunter2"},
		{"redis://user:hunter2@host:99999", "hunter2"},
		{"http://:hunter2@host:6379", "hunter2"},
		{"redis://:hun%zzter2@host:6379", "ter2"},
	} {
		_, err := Options(c.url, errBad)
		if err == nil {
			t.Errorf("step %d: Options(%q) accepted it", i, c.url)
			continue
		}
		if strings.Contains(err.Error(), c.secret) {
			t.Errorf("step %d: Options(%q) = %v: shows the password", i, c.url, err)
		}
	}
}

// TestOptionsHidesQueryPasswords: a password given in the URL's query
// (?password=…, which some Redis clients read) or fragment is not quoted
// in the refusal either — the query is refused, and the refusal used to
// echo it whole — in any spelling, parsable or not.
func TestOptionsHidesQueryPasswords(t *testing.T) {
	for i, u := range []string{
		"redis://127.0.0.1:6379/?password=SECRET",
		"redis://127.0.0.1:6379?password=SECRET",
		"redis://127.0.0.1:6379/0?db=0&PASSWORD=SECRET",
		"redis://127.0.0.1:6379/?%70assword=SECRET",
		"redis://127.0.0.1:6379/?SECRET",
		"redis://127.0.0.1:6379/#password=SECRET",
		"redis://127.0.0.1:70000/?password=SECRET",
		"redis://127.0.0.1:port/?password=SECRET",
		"redis://127.0.0.1:port/?password=SEC@SECRET",
		"redis://127.0.0.1:6379/?password=SECRET\n",
		"rediss://user@127.0.0.1:6379/?password=SECRET",
	} {
		_, err := Options(u, errBad)
		if err == nil {
			t.Errorf("step %d: Options(%q) accepted it", i, u)
			continue
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("step %d: Options(%q) = %v: shows the password", i, u, err)
		}
	}
}

// TestOptionsRefusals: each refusal wraps the caller's sentinel and names
// what is wrong; a good URL gets retries and caching off.
func TestOptionsRefusals(t *testing.T) {
	for i, tc := range []struct{ url, want string }{
		{"http://127.0.0.1:1", "want redis://host:port[/db]"},
		{"redis://127.0.0.1", "no port: want 1 to 65535"},
		{"redis://127.0.0.1:6379?x=1", "no query"},
	} {
		err := Check(tc.url, errBad)
		if !errors.Is(err, errBad) || !strings.HasPrefix(err.Error(), "assign: invalid argument: redis URL ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("step %d: Check(%q) = %v, want the sentinel saying %q", i, tc.url, err, tc.want)
		}
	}
	opt, err := Options("redis://127.0.0.1:6379/2", errBad)
	if err != nil || !opt.DisableRetry || !opt.DisableCache || opt.SelectDB != 2 {
		t.Errorf("Options of a good URL: %+v %v", opt, err)
	}
}

// FuzzClientOptions: a Redis URL is accepted or refused with the
// caller's sentinel, never with a panic.
func FuzzClientOptions(f *testing.F) {
	for _, s := range []string{"redis://127.0.0.1:6379", "rediss://u:p@h:1/2", "redis://h", "unix:///tmp/x", "redis://[::1]:6379/0", "redis://h:1/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		opt, err := Options(s, errBad)
		if err != nil {
			if !errors.Is(err, errBad) {
				t.Fatalf("%q: %v does not wrap the sentinel", s, err)
			}
			return
		}
		if len(opt.InitAddress) == 0 || !opt.DisableRetry {
			t.Fatalf("%q: options %+v", s, opt)
		}
	})
}
