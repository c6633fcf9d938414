package web

import (
	"bytes"
	"encoding/json"
	"math/big"
	"net/url"
	"testing"
)

// FuzzParseQuery: the strict parser accepts only what net/url's own
// parser reads the same way — never a pair that net/url would drop or
// split otherwise — and refuses with a field and a message, never a panic.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{
		"scenario=steady&seed=7", "seed=%zz", "bogus%zz=1", "a=1&&b=2&", "a=1;b=2", "a", "=1", "a=%E2%82%AC", "a=%ff", "a=1&a=2", "a+b=c+d",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, aerr := parseQuery(raw)
		if aerr != nil {
			if aerr.status != 400 || aerr.msg == "" {
				t.Fatalf("%q: refusal %+v", raw, aerr)
			}
			return
		}
		want, err := url.ParseQuery(raw)
		if err != nil {
			t.Fatalf("%q accepted, but net/url says %v", raw, err)
		}
		if len(want) != len(got) {
			t.Fatalf("%q: %v, net/url reads %v", raw, got, want)
		}
		for k, vs := range want {
			if len(vs) != 1 || len(got[k]) != 1 || got[k][0] != vs[0] {
				t.Fatalf("%q: %v, net/url reads %v", raw, got, want)
			}
		}
	})
}

// FuzzDecodeObject: a body is accepted only if it is one JSON object that
// encoding/json reads, with no key twice at any depth; anything refused
// is a 400 with a message. Its fields are read as the API's decoders
// read them: unmarshal refuses null and only null, and parseInt takes a
// value only if it is exactly that whole number (math/big's rationals are
// the reference).
func FuzzDecodeObject(f *testing.F) {
	for _, s := range []string{
		`{"a": 1}`, `{"a": 1, "a": 2}`, `{"a": [{"b": 1, "b": 2}]}`, `{"a": {"b": {}}} x`, `[]`, `null`, ``,
		`{"a": "\u0061", "\u0061": 1}`, `{"a":[[[[[[[[[]]]]]]]]]}`, `{"a": 1e999}`, `{"x": "\ud800"}`,
		`{"a": null}`, `{"a": [null]}`, `{"n": 1e-400}`, `{"n": 1.0000000000000001}`, `{"n": 2.50e1}`, `{"n": -0}`, `{"n": 9007199254740993}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fields, aerr := decodeObject(body, "{}", nil)
		if aerr != nil {
			if aerr.status != 400 || aerr.msg == "" {
				t.Fatalf("%q: refusal %+v", body, aerr)
			}
			return
		}
		var v map[string]any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber() // 1e999 is a JSON number, just not a float64
		if err := dec.Decode(&v); err != nil || v == nil {
			t.Fatalf("%q accepted, but encoding/json says %v", body, err)
		}
		if len(fields) != len(v) {
			t.Fatalf("%q: %d fields, encoding/json reads %d", body, len(fields), len(v))
		}
		// No duplicate survived: re-encoding what was read keeps every key.
		if n := countKeys(v); n != countKeysRaw(t, body) {
			t.Fatalf("%q: %d keys read, %d in the body: a duplicate got through", body, n, countKeysRaw(t, body))
		}
		for k, raw := range fields {
			var into json.RawMessage // any value but null
			if err := unmarshal(raw, &into); (err != nil) != (string(raw) == "null") {
				t.Fatalf("%q: unmarshal of field %q %s: %v", body, k, raw, err)
			}
			n, err := parseInt(raw)
			if err != nil || bytes.ContainsAny(raw, "eE") && len(raw) > 24 {
				continue // math/big would expand a long exponent
			}
			r, ok := new(big.Rat).SetString(string(raw))
			if !ok || !r.IsInt() || !r.Num().IsInt64() || r.Num().Int64() != n {
				t.Fatalf("%q: parseInt read field %q %s as %d", body, k, raw, n)
			}
		}
	})
}

// countKeys counts the keys of every object in a decoded value.
func countKeys(v any) int {
	switch x := v.(type) {
	case map[string]any:
		n := len(x)
		for _, e := range x {
			n += countKeys(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range x {
			n += countKeys(e)
		}
		return n
	}
	return 0
}

// countKeysRaw counts the keys written in a body, duplicates included.
func countKeysRaw(t *testing.T, body []byte) int {
	var count func(raw json.RawMessage) int
	count = func(raw json.RawMessage) int {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) == nil && obj != nil {
			n := 0
			// The keys as written: walk tokens of this object only.
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.Token()
			for dec.More() {
				tok, _ := dec.Token()
				_ = tok
				n++
				var skip json.RawMessage
				dec.Decode(&skip)
				n += count(skip)
			}
			return n
		}
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) == nil {
			n := 0
			for _, e := range arr {
				n += count(e)
			}
			return n
		}
		return 0
	}
	return count(body)
}
