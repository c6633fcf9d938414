package opstest

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// HTTPWhole is Spin's whole for HTTP/1.1: the length of the answer at the
// start of b once its headers and its Content-Length of body are there,
// 0 before; an error for a status other than 200, a header block without
// a Content-Length or one that is not a number.
func HTTPWhole(b []byte) (int, error) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		if len(b) >= 12 && !bytes.HasPrefix(b, []byte("HTTP/1.1 200")) {
			return 0, fmt.Errorf("status %q", b[:12])
		}
		return 0, nil
	}
	head := b[:end+2]
	if !bytes.HasPrefix(head, []byte("HTTP/1.1 200 ")) {
		line, _, _ := bytes.Cut(head, []byte("\r\n"))
		return 0, fmt.Errorf("status %q", line)
	}
	n := -1
	for line := range bytes.SplitSeq(head, []byte("\r\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok || !bytes.EqualFold(k, []byte("Content-Length")) {
			continue
		}
		m, err := strconv.Atoi(string(bytes.TrimSpace(v)))
		if err != nil || m < 0 {
			return 0, fmt.Errorf("content length %q", v)
		}
		n = m
	}
	if n < 0 {
		return 0, errors.New("no content length")
	}
	if n > len(b)-end-4 {
		return 0, nil
	}
	return end + 4 + n, nil
}

// PongWhole is Spin's whole for Redis's answer to PING: 7 bytes, +PONG.
func PongWhole(b []byte) (int, error) {
	const pong = "+PONG\r\n"
	if len(b) > len(pong) {
		b = b[:len(pong)]
	}
	if !bytes.HasPrefix([]byte(pong), b) {
		return 0, fmt.Errorf("answer %q, want +PONG", b)
	}
	if len(b) < len(pong) {
		return 0, nil
	}
	return len(pong), nil
}
