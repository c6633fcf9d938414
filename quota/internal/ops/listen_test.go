package ops

import (
	"strings"
	"testing"
)

// TestCheckListen: a port out of 0 to 65535 is refused, naming the field,
// the address and the range; the form is left to net.Listen.
func TestCheckListen(t *testing.T) {
	for i, tc := range []struct {
		addr, want string // want: the refusal, or "" for none
	}{
		{"127.0.0.1:0", ""}, {"127.0.0.1:65535", ""}, {":7070", ""}, {"[::1]:80", ""}, {"localhost:http", ""},
		{"no port", ""}, // net.Listen's to refuse
		{"127.0.0.1:70000", `--listen "127.0.0.1:70000": port 70000: want 0 to 65535 (0: any free port)`},
		{"127.0.0.1:-1", `--listen "127.0.0.1:-1": port -1: want 0 to 65535`},
		{"127.0.0.1:nosuchservice", `port nosuchservice: want 0 to 65535`},
	} {
		err := CheckListen("--listen", tc.addr)
		if (tc.want == "") != (err == nil) || err != nil && !strings.HasPrefix(err.Error(), tc.want) && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("step %d: CheckListen(%q) = %v; want %q", i, tc.addr, err, tc.want)
		}
	}
}
