package jsonnum

import (
	"errors"
	"fmt"
)

// MaxExact is the largest magnitude Int reads: 2^53, beyond which a
// float64 (what a browser's JSON numbers are) no longer holds every whole
// number.
const MaxExact = 1 << 53

var (
	// ErrSyntax: not a JSON number (null, a string, "+1", "0x10", "1.").
	ErrSyntax = errors.New("jsonnum: not a JSON number")
	// ErrNotInteger: a JSON number that is not a whole number (1.5, 1e-400).
	ErrNotInteger = errors.New("jsonnum: not a whole number")
	// ErrRange: a whole number beyond ±MaxExact.
	ErrRange = errors.New("jsonnum: beyond ±2^53")
)

// Int reads raw, one JSON number (RFC 8259, with JSON's whitespace around
// it), as the whole number it is exactly: 7, -0, 1e3, 2.50e1 and 100e-2
// are whole; 1.5, 1e-400 and 1.0000000000000001 are not. The decision is
// made on the decimal digits, never through a float. It returns ErrSyntax,
// ErrNotInteger or ErrRange otherwise. It is safe for concurrent use.
func Int(raw []byte) (int64, error) {
	s := trim(raw)
	neg, digits, exp, ok := parse(s)
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrSyntax, clip(s))
	}
	// The value is digits × 10^exp; take the leading zeros off digits,
	// then its trailing ones into exp.
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		return 0, nil // 0, -0, 0.000e5: zero
	}
	for digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	if exp < 0 {
		// digits ends in a digit other than 0: a fraction remains.
		return 0, fmt.Errorf("%w: %q", ErrNotInteger, clip(s))
	}
	// MaxExact has 16 digits: more digits than that is beyond it.
	if int64(len(digits))+exp > 16 {
		return 0, fmt.Errorf("%w: %q", ErrRange, clip(s))
	}
	var v int64
	for _, c := range digits {
		v = v*10 + int64(c-'0')
	}
	for ; exp > 0; exp-- {
		v *= 10
	}
	if v > MaxExact {
		return 0, fmt.Errorf("%w: %q", ErrRange, clip(s))
	}
	if neg {
		v = -v
	}
	return v, nil
}

// maxExp bounds the exponent read: past it the number is far beyond
// MaxExact, or far below 1, whatever its digits (a body is at most a few
// MiB, so its digits cannot bring it back).
const maxExp = 1 << 40

// parse splits a JSON number into its sign, its digits (integer part then
// fraction) and the power of ten they are multiplied by.
func parse(s []byte) (neg bool, digits []byte, exp int64, ok bool) {
	i := 0
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	start := i
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return false, nil, 0, false
	}
	digits = s[start:i]
	if i < len(s) && s[i] == '.' {
		i++
		from := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == from {
			return false, nil, 0, false
		}
		// Only a fraction costs a copy: the digits are then in two pieces.
		digits = append(append(make([]byte, 0, len(digits)+i-from), digits...), s[from:i]...)
		exp -= int64(i - from)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		from := i
		var e int64
		for i < len(s) && isDigit(s[i]) {
			if e < maxExp {
				e = e*10 + int64(s[i]-'0')
			}
			i++
		}
		if i == from {
			return false, nil, 0, false
		}
		e = min(e, maxExp)
		if eneg {
			e = -e
		}
		exp += e
	}
	if i != len(s) {
		return false, nil, 0, false
	}
	return neg, digits, exp, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// trim takes JSON's whitespace off both ends.
func trim(s []byte) []byte {
	space := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(s) > 0 && space(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && space(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// clip shortens what a client sent before it is quoted in an error.
func clip(s []byte) string {
	if len(s) > 40 {
		return string(s[:40]) + "…"
	}
	return string(s)
}
