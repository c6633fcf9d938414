package agent

import (
	"github.com/afloat/afloat/internal/strictjson"
)

// decodeAllow decodes the body of POST /v1/allow strictly (one object;
// unknown fields, a key given twice, null, a fraction in n refused:
// internal/strictjson), without allocations for the bodies clients send:
// an object of the three known keys, each at most once, with plain ASCII
// strings and an integer n. Anything else — escapes, other keys, a key
// twice, null, a number with a fraction — takes strictjson's path, which
// also words the errors. FuzzDecodeAllow holds the two to the same
// answers. An absent n is 1; a present one is what it says, so that 0 and
// -0 are refused by the range check rather than read as the default. The
// decision itself is tens of nanoseconds; at 10,000 checks a second what
// a check allocates is what the collector makes the tail wait for
// (docs/benchmarks.md, "The region's decision API").
func decodeAllow(b []byte) (AllowRequest, error) {
	if req, ok := decodeAllowFast(b); ok {
		return req, nil
	}
	return decodeAllowStrict(b)
}

// decodeAllowStrict is decodeAllow's path for any body.
func decodeAllowStrict(b []byte) (AllowRequest, error) {
	var body struct {
		Tenant   string `json:"tenant"`
		Endpoint string `json:"endpoint"`
		N        *int64 `json:"n"`
	}
	if err := strictjson.Decode(b, &body); err != nil {
		return AllowRequest{}, err
	}
	req := AllowRequest{Tenant: body.Tenant, Endpoint: body.Endpoint, N: 1}
	if body.N != nil {
		req.N = *body.N
	}
	return req, nil
}

// decodeAllowFast is decodeAllow's path without allocations but for the
// two strings; ok is false when b is not of the simple shape it knows.
func decodeAllowFast(b []byte) (req AllowRequest, ok bool) {
	req.N = 1 // unless n is given
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return req, false
	}
	i = skipSpace(b, i+1)
	var seen [3]bool
	if i < len(b) && b[i] == '}' {
		return req, skipSpace(b, i+1) == len(b)
	}
	for {
		key, j, ok := plainString(b, i)
		if !ok {
			return req, false
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return req, false
		}
		i = skipSpace(b, i+1)
		switch string(key) {
		case "tenant", "endpoint":
			k := 0
			if key[0] == 'e' {
				k = 1
			}
			v, j, ok := plainString(b, i)
			if !ok || seen[k] {
				return req, false
			}
			seen[k] = true
			if k == 0 {
				req.Tenant = string(v)
			} else {
				req.Endpoint = string(v)
			}
			i = j
		case "n":
			n, j, ok := plainInt(b, i)
			if !ok || seen[2] {
				return req, false
			}
			seen[2] = true
			req.N, i = n, j
		default:
			return req, false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return req, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return req, skipSpace(b, i+1) == len(b)
		default:
			return req, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads a JSON string at b[i] made only of printable ASCII
// with no escapes; it returns the bytes between the quotes.
func plainString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// plainInt reads a JSON integer at b[i] of at most 18 digits, as JSON
// writes them (no leading zero, no fraction, no exponent).
func plainInt(b []byte, i int) (n int64, next int, ok bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || digits > 18 || (digits > 1 && b[start] == '0') {
		return 0, 0, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, 0, false
	}
	if neg {
		n = -n
	}
	return n, i, true
}
