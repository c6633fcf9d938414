package loadgen

import (
	"strings"
	"testing"
)

func TestHTTPWhole(t *testing.T) {
	ok := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhello"
	for i := range len(ok) {
		if n, err := HTTPWhole([]byte(ok[:i])); n != 0 || err != nil {
			t.Fatalf("HTTPWhole(%q) = %d, %v; want 0, nil: not whole yet", ok[:i], n, err)
		}
	}
	if n, err := HTTPWhole([]byte(ok)); n != len(ok) || err != nil {
		t.Fatalf("HTTPWhole(whole) = %d, %v; want %d", n, err, len(ok))
	}
	if n, err := HTTPWhole([]byte(ok + "HTTP/1.1")); n != len(ok) || err != nil {
		t.Fatalf("HTTPWhole(whole and more) = %d, %v; want %d", n, err, len(ok))
	}
	lower := strings.Replace(ok, "Content-Length", "content-length", 1)
	if n, err := HTTPWhole([]byte(lower)); n != len(lower) || err != nil {
		t.Fatalf("HTTPWhole(lower-case header) = %d, %v", n, err)
	}
	for _, bad := range []string{
		"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 503 Ser",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
	} {
		if _, err := HTTPWhole([]byte(bad)); err == nil {
			t.Errorf("HTTPWhole(%q): no error", bad)
		}
	}
}

func TestPongWhole(t *testing.T) {
	for i, want := range []int{0, 0, 0, 0, 0, 0, 0, 7} {
		if n, err := PongWhole([]byte("+PONG\r\n"[:i])); n != want || err != nil {
			t.Errorf("PongWhole(%q) = %d, %v; want %d", "+PONG\r\n"[:i], n, err, want)
		}
	}
	for _, bad := range []string{"-ERR", "+PONX", "$4\r\n"} {
		if _, err := PongWhole([]byte(bad)); err == nil {
			t.Errorf("PongWhole(%q): no error", bad)
		}
	}
}

// FuzzHTTPWhole: never a panic, and a length it reports lies within b.
func FuzzHTTPWhole(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := HTTPWhole(b)
		if n < 0 || n > len(b) || (err != nil && n != 0) {
			t.Fatalf("HTTPWhole(%q) = %d, %v", b, n, err)
		}
	})
}

// FuzzGRPCRead: whatever a server sends, a connection's Read neither
// panics nor consumes bytes it was not given.
func FuzzGRPCRead(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x04\x00\x00\x00\x00\x00"))
	f.Add([]byte("\x00\x00\x08\x06\x00\x00\x00\x00\x00ABCDEFGH"))
	f.Add([]byte("\x00\x00\x02\x01\x0d\x00\x00\x00\x01\x01\x88"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := GRPC("127.0.0.1:1", "/a.B/C", []byte{1}, nil).NewConn()
		c.Hello()
		c.Request()
		used, _, _, err := c.Read(b, true)
		if used < 0 || used > len(b) || (err != nil && used != 0) {
			t.Fatalf("Read(%q) = %d, %v", b, used, err)
		}
	})
}
