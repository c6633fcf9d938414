package hostcheck

import (
	"errors"
	"testing"
)

func TestAllows(t *testing.T) {
	n, err := New("quota.internal", "10.0.0.5", "[2001:db8::1]", "Coord-1.Example.")
	if err != nil {
		t.Fatal(err)
	}
	n.AddHostPort("0.0.0.0:7080") // every interface: no name
	n.AddHostPort("[::]:7080")
	n.AddHostPort(":7080")
	n.AddHostPort("192.0.2.7:7080")
	for i, c := range []struct {
		host string
		want bool
	}{
		{"localhost", true}, {"localhost:7080", true}, {"LOCALHOST.:7080", true}, {"api.localhost", true},
		{"127.0.0.1", true}, {"127.0.0.1:7080", true}, {"127.9.9.9:1", true}, {"[::1]:7080", true}, {"[::ffff:127.0.0.1]:1", true},
		{"quota.internal:7080", true}, {"QUOTA.internal.", true}, {"coord-1.example:7070", true},
		{"10.0.0.5:7080", true}, {"[2001:db8::1]:7080", true}, {"[2001:db8:0::1]", true}, {"192.0.2.7", true},
		{"evil.example", false}, {"evil.example:7080", false}, {"quota.internal.evil.example", false},
		{"localhost.evil.example", false}, {"10.0.0.6:7080", false}, {"0.0.0.0:7080", false}, {"[::]:7080", false},
		{"", false}, {":7080", false}, {"127.0.0.1.evil.example", false},
	} {
		if got := n.Allows(c.host); got != c.want {
			t.Errorf("step %d: Allows(%q) = %v, want %v", i, c.host, got, c.want)
		}
	}
	var none *Names
	if !none.Allows("localhost:1") || none.Allows("quota.internal") {
		t.Error("a nil set answers loopback names only")
	}
	for _, bad := range []string{"", "host:80", "a b", "evil.example/x", "http://x", "-"} {
		if _, err := New(bad); !errors.Is(err, ErrName) && bad != "-" {
			t.Errorf("New(%q): %v, want ErrName", bad, err)
		}
	}
}

func TestListenLoopback(t *testing.T) {
	for i, c := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:7080", true}, {"[::1]:0", true}, {"localhost:80", true}, {"127.1.2.3:1", true},
		{"0.0.0.0:7080", false}, {":7080", false}, {"[::]:7080", false}, {"10.0.0.5:7080", false},
		{"example.com:80", false}, {"127.0.0.1", false}, {"", false},
	} {
		if got := ListenLoopback(c.addr); got != c.want {
			t.Errorf("step %d: ListenLoopback(%q) = %v, want %v", i, c.addr, got, c.want)
		}
	}
}
