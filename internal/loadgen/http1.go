package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// HTTP1 is HTTP/1.1 on keep-alive connections: each request is req (a
// whole request, body included), each answer a 200 with a
// Content-Length.
func HTTP1(req []byte) Wire { return http1{req} }

// Pong is Redis's PING, answered +PONG.
func Pong() Wire { return pong{} }

type http1 struct{ req []byte }

func (w http1) NewConn() Conn   { return w }
func (w http1) Hello() []byte   { return nil }
func (w http1) Request() []byte { return w.req }

func (w http1) Read(b []byte, waiting bool) (int, bool, []byte, error) {
	return readWhole(b, waiting, HTTPWhole)
}

type pong struct{}

func (pong) NewConn() Conn   { return pong{} }
func (pong) Hello() []byte   { return nil }
func (pong) Request() []byte { return []byte("PING\r\n") }

func (pong) Read(b []byte, waiting bool) (int, bool, []byte, error) {
	return readWhole(b, waiting, PongWhole)
}

// readWhole is Read for a protocol of one answer per request and nothing
// else: bytes nobody asked for are an error, and so are bytes after the
// answer.
func readWhole(b []byte, waiting bool, whole func([]byte) (int, error)) (int, bool, []byte, error) {
	if !waiting {
		return 0, false, nil, fmt.Errorf("loadgen: %d bytes unasked for: %q", len(b), b[:min(len(b), 64)])
	}
	n, err := whole(b)
	switch {
	case err != nil:
		return 0, false, nil, fmt.Errorf("loadgen: answer: %w", err)
	case n == 0:
		return 0, false, nil, nil
	case n != len(b):
		return 0, false, nil, fmt.Errorf("loadgen: %d bytes after the answer", len(b)-n)
	}
	return n, true, nil, nil
}

// HTTPWhole is the length of the HTTP/1.1 answer at the start of b once
// its headers and its Content-Length of body are there, 0 before; an
// error for a status other than 200, a header block without a
// Content-Length or one that is not a number.
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

// PongWhole is 7 once b holds Redis's +PONG, 0 before.
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
