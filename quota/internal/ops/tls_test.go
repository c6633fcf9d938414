package ops

import (
	"strings"
	"testing"
)

// TestPlainWarning: plain HTTP beyond loopback is warned of, naming the
// flag and the fix; on loopback or with TLS it is not.
func TestPlainWarning(t *testing.T) {
	for i, tc := range []struct {
		addr string
		tls  bool
		warn bool
	}{
		{"127.0.0.1:7070", false, false},
		{"[::1]:7070", false, false},
		{"localhost:7070", false, false},
		{"0.0.0.0:7070", false, true},
		{":7070", false, true},
		{"10.0.0.5:7070", false, true},
		{"0.0.0.0:7070", true, false},
	} {
		w := PlainWarning("quota coordinator", "--listen", tc.addr, tc.tls)
		if got := w != ""; got != tc.warn {
			t.Errorf("step %d: PlainWarning(%s, tls %v) = %q, want a warning: %v", i, tc.addr, tc.tls, w, tc.warn)
		}
		if tc.warn && (!strings.Contains(w, "--listen "+tc.addr) || !strings.Contains(w, "--tls-cert")) {
			t.Errorf("step %d: %q: want the flag, the address and the fix named", i, w)
		}
	}
}

// TestTLSFilesCheck: the flags that do not go together are refused,
// named.
func TestTLSFilesCheck(t *testing.T) {
	for i, tc := range []struct {
		f    TLSFiles
		want string
	}{
		{TLSFiles{}, ""},
		{TLSFiles{Cert: "c", Key: "k"}, ""},
		{TLSFiles{Cert: "c", Key: "k", ClientCA: "ca"}, ""},
		{TLSFiles{Cert: "c"}, "--tls-cert and --tls-key: give both"},
		{TLSFiles{Key: "k"}, "--tls-cert and --tls-key: give both"},
		{TLSFiles{ClientCA: "ca"}, "--client-ca: needs --tls-cert and --tls-key"},
	} {
		err := tc.f.Check()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("step %d: %+v: %v, want %q", i, tc.f, err, tc.want)
		}
	}
}
