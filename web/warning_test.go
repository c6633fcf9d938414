package web

import (
	"strings"
	"testing"
)

// TestWarning: the start-up warning names what AllowRemote opens, on a
// loopback address and beyond it, and is empty without AllowRemote.
func TestWarning(t *testing.T) {
	for i, tc := range []struct {
		addr        string
		allowRemote bool
		want        string
	}{
		{"127.0.0.1:8080", false, ""},
		{"0.0.0.0:8080", false, ""}, // Validate refuses it: nothing to warn of
		{"0.0.0.0:8080", true, "listening on 0.0.0.0:8080, beyond loopback. The console has no authentication"},
		{"[::1]:8080", true, "--allow-remote with the loopback address [::1]:8080 turns off the Host check"},
	} {
		c := DefaultConfig()
		c.Addr, c.AllowRemote = tc.addr, tc.allowRemote
		if got := c.Warning(); (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("step %d: %s, AllowRemote %v: Warning() = %q, want %q…", i, tc.addr, tc.allowRemote, got, tc.want)
		}
	}
}
