package assign

import (
	"strings"
	"testing"
)

// TestClientOptionsHidesQueryPasswords: a password given in the URL's
// query (?password=…, which some Redis clients read) or fragment is not
// quoted in the refusal either — the query is refused, and the refusal
// used to echo it whole — in any spelling, parsable or not.
func TestClientOptionsHidesQueryPasswords(t *testing.T) {
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
		_, err := clientOptions(u)
		if err == nil {
			t.Errorf("step %d: clientOptions(%q) accepted it", i, u)
			continue
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("step %d: clientOptions(%q) = %v: shows the password", i, u, err)
		}
	}
}
