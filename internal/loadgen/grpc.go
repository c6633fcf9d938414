package loadgen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/net/http2/hpack"
)

// GRPC is a unary gRPC call over HTTP/2 without TLS (h2c, as gRPC's
// insecure credentials speak it): each request calls method (a path,
// "/package.Service/Method") on authority with msg, the request message
// already marshalled; each answer's message goes to check (nil: none),
// whose error ends the run, as does a grpc-status other than 0.
//
// It is a client of the protocol's frames, not a gRPC library: one call at
// a time on a connection, as Spin drives it; the header block is encoded
// without HPACK's dynamic table, so every request's bytes are the same
// but for the stream's number; it opens every window at 1 GiB when it
// connects, so that no answer waits for a window update in a run, and
// trusts the server to keep its own window open for requests of a few
// dozen bytes (a server that did not would end the connection, and the
// run, with an error).
func GRPC(authority, method string, msg []byte, check func([]byte) error) Wire {
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{
		{":method", "POST"}, {":scheme", "http"}, {":path", method}, {":authority", authority},
		{"content-type", "application/grpc"}, {"te", "trailers"},
	} {
		// Sensitive: a literal never indexed, so no request leans on the
		// dynamic table and all are alike.
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1], Sensitive: true}) //nolint:errcheck // a bytes.Buffer does not fail
	}
	body := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(body[1:], uint32(len(msg)))
	copy(body[5:], msg)
	var req []byte
	req = appendFrame(req, frameHeaders, flagEndHeaders, 1, hb.Bytes())
	dataAt := len(req)
	req = appendFrame(req, frameData, flagEndStream, 1, body)
	return &grpcWire{req: req, dataAt: dataAt, check: check}
}

// HTTP/2's frames and flags (RFC 9113, section 6) that GRPC reads.
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePing         = 0x6
	frameGoAway       = 0x7
	frameWindowUpdate = 0x8
	frameContinuation = 0x9

	flagEndStream  = 0x1
	flagAck        = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20
)

const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

type grpcWire struct {
	req    []byte // HEADERS then DATA, on stream 1
	dataAt int    // where the DATA frame starts
	check  func([]byte) error
}

func (w *grpcWire) NewConn() Conn {
	return &grpcConn{w: w, req: bytes.Clone(w.req), dec: hpack.NewDecoder(4096, nil)}
}

// grpcConn is one connection's state: its last stream, and what that
// stream has answered so far.
type grpcConn struct {
	w       *grpcWire
	req     []byte
	stream  uint32
	dec     *hpack.Decoder
	headers bool   // the answer's headers came, status 200
	msg     []byte // the answer's DATA so far
	reply   []byte
}

func (c *grpcConn) Hello() []byte {
	b := []byte(preface)
	var s [12]byte
	binary.BigEndian.PutUint16(s[0:], 0x2) // SETTINGS_ENABLE_PUSH
	binary.BigEndian.PutUint32(s[2:], 0)
	binary.BigEndian.PutUint16(s[6:], 0x4) // SETTINGS_INITIAL_WINDOW_SIZE
	binary.BigEndian.PutUint32(s[8:], 1<<30)
	b = appendFrame(b, frameSettings, 0, 0, s[:])
	var inc [4]byte
	binary.BigEndian.PutUint32(inc[:], 1<<30-65535) // the connection's window, to 1 GiB
	return appendFrame(b, frameWindowUpdate, 0, 0, inc[:])
}

func (c *grpcConn) Request() []byte {
	if c.stream == 0 {
		c.stream = 1
	} else {
		c.stream += 2
	}
	binary.BigEndian.PutUint32(c.req[5:], c.stream)
	binary.BigEndian.PutUint32(c.req[c.w.dataAt+5:], c.stream)
	c.headers, c.msg = false, c.msg[:0]
	return c.req
}

var errGRPC = errors.New("loadgen: grpc")

func (c *grpcConn) Read(b []byte, waiting bool) (used int, answered bool, reply []byte, err error) {
	c.reply = c.reply[:0]
	for len(b)-used >= 9 {
		h := b[used:]
		n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		if len(h) < 9+n {
			break
		}
		typ, flags, sid := h[3], h[4], binary.BigEndian.Uint32(h[5:])&(1<<31-1)
		p := h[9 : 9+n]
		used += 9 + n
		if (typ == frameData || typ == frameHeaders || typ == frameRSTStream) && (!waiting || answered || sid != c.stream) {
			return 0, false, nil, fmt.Errorf("%w: frame %d on stream %d, none asked for", errGRPC, typ, sid)
		}
		switch typ {
		case frameData:
			if p, err = unpad(flags, p, 0); err != nil {
				return 0, false, nil, err
			}
			c.msg = append(c.msg, p...)
			if flags&flagEndStream != 0 {
				return 0, false, nil, fmt.Errorf("%w: the answer ended without trailers", errGRPC)
			}
		case frameHeaders:
			if answered, err = c.headersFrame(flags, p); err != nil {
				return 0, false, nil, err
			}
		case frameRSTStream:
			code := uint32(0)
			if len(p) >= 4 {
				code = binary.BigEndian.Uint32(p)
			}
			return 0, false, nil, fmt.Errorf("%w: stream reset, code %d", errGRPC, code)
		case frameSettings:
			if flags&flagAck == 0 {
				c.reply = appendFrame(c.reply, frameSettings, flagAck, 0, nil)
			}
		case framePing:
			if flags&flagAck == 0 {
				c.reply = appendFrame(c.reply, framePing, flagAck, 0, p)
			}
		case frameGoAway:
			return 0, false, nil, fmt.Errorf("%w: the server said GOAWAY (%q)", errGRPC, p[min(len(p), 8):])
		case frameContinuation:
			return 0, false, nil, fmt.Errorf("%w: a header block over several frames", errGRPC)
		}
	}
	return used, answered, c.reply, nil
}

// headersFrame reads the answer's headers (status 200) or its trailers
// (grpc-status 0: the message goes to check, and the answer is whole).
func (c *grpcConn) headersFrame(flags byte, p []byte) (bool, error) {
	if flags&flagEndHeaders == 0 {
		return false, fmt.Errorf("%w: a header block over several frames", errGRPC)
	}
	skip := 0
	if flags&flagPriority != 0 {
		skip = 5
	}
	p, err := unpad(flags, p, skip)
	if err != nil {
		return false, err
	}
	fields, err := c.dec.DecodeFull(p)
	if err != nil {
		return false, fmt.Errorf("%w: headers: %v", errGRPC, err)
	}
	status, grpcStatus, grpcMessage := "", "", ""
	for _, f := range fields {
		switch f.Name {
		case ":status":
			status = f.Value
		case "grpc-status":
			grpcStatus = f.Value
		case "grpc-message":
			grpcMessage = f.Value
		}
	}
	if !c.headers {
		if status != "200" {
			return false, fmt.Errorf("%w: status %q", errGRPC, status)
		}
		c.headers = true
	}
	if flags&flagEndStream == 0 {
		return false, nil
	}
	if grpcStatus != "0" {
		return false, fmt.Errorf("%w: grpc-status %q: %s", errGRPC, grpcStatus, grpcMessage)
	}
	if len(c.msg) < 5 || c.msg[0] != 0 || int(binary.BigEndian.Uint32(c.msg[1:])) != len(c.msg)-5 {
		return false, fmt.Errorf("%w: an answer of %d bytes is not one uncompressed message", errGRPC, len(c.msg))
	}
	if c.w.check != nil {
		if err := c.w.check(c.msg[5:]); err != nil {
			return false, fmt.Errorf("%w: answer: %w", errGRPC, err)
		}
	}
	return true, nil
}

// unpad strips a frame's padding and the skip bytes before its content.
func unpad(flags byte, p []byte, skip int) ([]byte, error) {
	if flags&flagPadded != 0 {
		if len(p) < 1 || int(p[0])+1+skip > len(p) {
			return nil, fmt.Errorf("%w: bad padding", errGRPC)
		}
		return p[1+skip : len(p)-int(p[0])], nil
	}
	if skip > len(p) {
		return nil, fmt.Errorf("%w: a frame too short", errGRPC)
	}
	return p[skip:], nil
}

func appendFrame(b []byte, typ, flags byte, stream uint32, p []byte) []byte {
	n := len(p)
	b = append(b, byte(n>>16), byte(n>>8), byte(n), typ, flags)
	b = binary.BigEndian.AppendUint32(b, stream)
	return append(b, p...)
}
