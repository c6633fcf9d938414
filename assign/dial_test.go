package assign

import (
	"strings"
	"testing"
)

// TestClientOptionsHidesPasswords: no refusal of a Redis URL quotes its
// password, however the URL is malformed (the review found the whole
// password in the error for a URL without a port, and the tail of one
// holding "@" on the console's page).
func TestClientOptionsHidesPasswords(t *testing.T) {
	for i, c := range []struct{ url, secret string }{
		{"redis://:PW-no-port@127.0.0.1", "PW-no-port"},
		{"redis://:p@SECRET@host", "SECRET"},
		{"redis://:hunter2@host:6379?db=1", "hunter2"},
		{"redis://:hunter2@host:6379/x", "hunter2"},
		{"redis://user:hunter2@host:99999", "hunter2"},
		{"http://:hunter2@host:6379", "hunter2"},
		{"redis://:hun%zzter2@host:6379", "ter2"},
	} {
		_, err := clientOptions(c.url)
		if err == nil {
			t.Errorf("step %d: clientOptions(%q) accepted it", i, c.url)
			continue
		}
		if strings.Contains(err.Error(), c.secret) {
			t.Errorf("step %d: clientOptions(%q) = %v: shows the password", i, c.url, err)
		}
	}
}
