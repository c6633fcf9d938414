package jsonnum

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
)

func TestInt(t *testing.T) {
	for i, tc := range []struct {
		in   string
		want int64
		err  error
	}{
		{"0", 0, nil}, {"-0", 0, nil}, {"7", 7, nil}, {" 7\n", 7, nil}, {"-12", -12, nil},
		{"1e3", 1000, nil}, {"1E+3", 1000, nil}, {"2.50e1", 25, nil}, {"100e-2", 1, nil}, {"0.000e5", 0, nil},
		{"0e-999999999999999999999", 0, nil}, {"9007199254740992", MaxExact, nil}, {"-9007199254740992", -MaxExact, nil},
		{"9007199254740993", 0, ErrRange}, {"1e16", 0, ErrRange}, {"1e999999999999999999", 0, ErrRange},
		{"1.5", 0, ErrNotInteger}, {"1e-400", 0, ErrNotInteger}, {"1.0000000000000001", 0, ErrNotInteger},
		{"-0.5", 0, ErrNotInteger}, {"1e-999999999999999999", 0, ErrNotInteger}, {"12345678901234567e-1", 0, ErrNotInteger},
		{"null", 0, ErrSyntax}, {"", 0, ErrSyntax}, {`"1"`, 0, ErrSyntax}, {"+1", 0, ErrSyntax}, {"01", 0, ErrSyntax},
		{"1.", 0, ErrSyntax}, {".5", 0, ErrSyntax}, {"1e", 0, ErrSyntax}, {"0x10", 0, ErrSyntax}, {"Infinity", 0, ErrSyntax},
		{"NaN", 0, ErrSyntax}, {"1 2", 0, ErrSyntax}, {"true", 0, ErrSyntax}, {"1_000", 0, ErrSyntax}, {"-", 0, ErrSyntax},
	} {
		got, err := Int([]byte(tc.in))
		if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("step %d: Int(%q) = %d, %v; want %d, %v", i, tc.in, got, err, tc.want, tc.err)
		}
	}
}

// FuzzInt compares Int with a simple reference: encoding/json's grammar
// for what a JSON number is, and math/big's exact rationals for its value.
func FuzzInt(f *testing.F) {
	for _, s := range []string{"0", "-0", "1e3", "1.5", "1e-400", "9007199254740993", "null", "+1", "2.50e1", "1e999999999", " 7 ", "-12.000e-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Int([]byte(s))
		var v any
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var num json.Number
		isNumber := false
		if dec.Decode(&v) == nil && json.Valid([]byte(s)) {
			num, isNumber = v.(json.Number)
		}
		if !isNumber {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Int(%q) = %d, %v; encoding/json does not read a number", s, got, err)
			}
			return
		}
		if errors.Is(err, ErrSyntax) {
			t.Fatalf("Int(%q): %v; encoding/json reads the number %s", s, err, num)
		}
		// math/big computes 10^exp exactly: only for exponents it can.
		if len(s) > 200 || hugeExponent(string(num)) {
			return
		}
		r, ok := new(big.Rat).SetString(string(num))
		if !ok {
			t.Fatalf("math/big cannot read %q", num)
		}
		switch {
		case !r.IsInt():
			if !errors.Is(err, ErrNotInteger) {
				t.Fatalf("Int(%q) = %d, %v; it is %s, not whole", s, got, err, r.RatString())
			}
		case r.Num().CmpAbs(big.NewInt(MaxExact)) > 0:
			if !errors.Is(err, ErrRange) {
				t.Fatalf("Int(%q) = %d, %v; it is %s, beyond 2^53", s, got, err, r.RatString())
			}
		default:
			if err != nil || got != r.Num().Int64() {
				t.Fatalf("Int(%q) = %d, %v; want %s", s, got, err, r.RatString())
			}
		}
	})
}

// hugeExponent reports an exponent of more than four digits, which
// math/big would take long to expand.
func hugeExponent(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 'e' || s[i] == 'E' {
			digits := 0
			for _, c := range s[i+1:] {
				if c >= '0' && c <= '9' {
					digits++
				}
			}
			return digits > 4
		}
	}
	return false
}
