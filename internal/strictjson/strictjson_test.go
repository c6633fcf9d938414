package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// body is a type with every kind the quota's bodies use.
type body struct {
	Name    string           `json:"name"`
	N       int64            `json:"n"`
	U       uint64           `json:"u,omitempty"`
	Small   int8             `json:"small"`
	Rate    *float64         `json:"rate,omitempty"`
	On      bool             `json:"on"`
	Costs   map[string]int64 `json:"costs,omitempty"`
	List    []item           `json:"list,omitempty"`
	Wait    time.Duration    `json:"wait_ns"`
	Any     any              `json:"any,omitempty"`
	Skipped string           `json:"-"`
	embedded
}

type embedded struct {
	Deep string `json:"deep"`
}

type item struct {
	Tenant string `json:"tenant"`
	Epoch  uint64 `json:"epoch"`
}

func TestDecodeRefuses(t *testing.T) {
	for i, c := range []struct{ in, path, reason string }{
		{`{"name":"fast","name":"acme"}`, "name", "given more than once"},
		{`{"list":[{"tenant":"a","tenant":"b"}]}`, "list[0].tenant", "given more than once"},
		{`{"costs":{"/x":1,"/x":2}}`, "costs./x", "given more than once"},
		{`{"any":{"a":1,"a":2}}`, "any.a", "given more than once"},
		{`{"name":"a","Name":"b"}`, "Name", "case-sensitive"},
		{`{"NAME":"a"}`, "NAME", "case-sensitive"},
		{`{"deeP":"a"}`, "deeP", "case-sensitive"},
		{"{\"na\u212ae\":1}", "", "unknown field"},
		{`{"extra":1}`, "extra", "unknown field"},
		{`{"Skipped":"x"}`, "Skipped", "unknown field"},
		{`{"n":null}`, "n", "null"},
		{`{"rate":null}`, "rate", "null"},
		{`{"list":[null]}`, "list[0]", "null"},
		{`{"costs":{"/x":null}}`, "costs./x", "null"},
		{`null`, "", "null"},
		{`{"n":1.5}`, "n", "want an integer"},
		{`{"n":1e3}`, "n", "want an integer"},
		{`{"n":1e-400}`, "n", "would read as 0"},
		{`{"rate":1e-400}`, "rate", "would read as 0"},
		{`{"rate":-1e-400}`, "rate", "would read as 0"},
		{`{"rate":1e400}`, "rate", "beyond the range"},
		{`{"n":9223372036854775808}`, "n", "want an integer"},
		{`{"small":128}`, "small", "want an integer"},
		{`{"u":-1}`, "u", "whole number"},
		{`{"costs":{"/x":0.5}}`, "costs./x", "want an integer"},
		{`{"n":"1"}`, "n", "want a number"},
		{`{"name":1}`, "name", "want a string"},
		{`{"on":1}`, "on", "want true or false"},
		{`{"list":{}}`, "list", "want an array"},
		{`{"costs":[]}`, "costs", "want an object"},
		{`[]`, "", "want an object"},
		{`{"name":"a"} {}`, "", "data after the value"},
		{`{"name":"a"}}`, "", "data after the value"},
		{``, "", "empty body"},
		{`   `, "", "empty body"},
		{`{"name":`, "name", "ends early"},
		{`{"name" "a"}`, "", "malformed"},
		{`{"any":` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `}`, "", "nested deeper"},
	} {
		var v body
		err := Decode([]byte(c.in), &v)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) {
			t.Errorf("step %d: Decode(%q) = %v, want an *Error", i, c.in, err)
			continue
		}
		if (c.path != "" && e.Path != c.path) || !strings.Contains(e.Reason, c.reason) {
			t.Errorf("step %d: Decode(%q): path %q, reason %q; want path %q and %q", i, c.in, e.Path, e.Reason, c.path, c.reason)
		}
		if !reflect.DeepEqual(v, body{}) {
			t.Errorf("step %d: Decode(%q) refused but changed v: %+v", i, c.in, v)
		}
	}
}

func TestDecodeAccepts(t *testing.T) {
	rate := 0.0
	for i, c := range []struct {
		in   string
		want body
	}{
		{`{}`, body{}},
		{` {"name":"acme","n":-0,"rate":0,"on":true} `, body{Name: "acme", Rate: &rate, On: true}},
		{`{"rate":0e-400,"n":0}`, body{Rate: &rate}},
		{`{"costs":{"/x":1,"/X":2},"list":[{"tenant":"a","epoch":18446744073709551615}]}`,
			body{Costs: map[string]int64{"/x": 1, "/X": 2}, List: []item{{"a", 1<<64 - 1}}}},
		{`{"wait_ns":1000000000,"deep":"d","any":[1,"x",{"k":true}]}`,
			body{Wait: time.Second, embedded: embedded{"d"}, Any: []any{1.0, "x", map[string]any{"k": true}}}},
		{`{"small":-128,"u":0}`, body{Small: -128}},
	} {
		var v body
		if err := Decode([]byte(c.in), &v); err != nil {
			t.Errorf("step %d: Decode(%q): %v", i, c.in, err)
			continue
		}
		if !reflect.DeepEqual(v, c.want) {
			t.Errorf("step %d: Decode(%q) = %+v, want %+v", i, c.in, v, c.want)
		}
	}
}

func TestDecodeNotAPointer(t *testing.T) {
	var v body
	if err := Decode([]byte(`{}`), v); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Decode into a value: %v, want ErrInvalid", err)
	}
}

// dupFree is the reference for duplicates and nulls: a plain walk that
// reports whether no object of a JSON value has a key twice and no value
// is null.
func dupFree(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func() bool
	walk = func() bool {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		if tok == nil {
			return false
		}
		if d, ok := tok.(json.Delim); ok {
			seen := map[string]bool{}
			for dec.More() {
				if d == '{' {
					k, _ := dec.Token()
					key, _ := k.(string)
					if seen[key] {
						return false
					}
					seen[key] = true
				}
				if !walk() {
					return false
				}
			}
			dec.Token() //nolint:errcheck
		}
		return true
	}
	return walk()
}

// FuzzDecode: no panic; what Decode accepts, encoding/json decodes to the
// same value with no unknown field, holds no key twice, and what Decode
// gives back encodes to a body Decode reads as the same value.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"name":"acme","n":3,"costs":{"/a":2},"list":[{"tenant":"t","epoch":1}]}`,
		`{"name":"fast","name":"acme"}`, `{"n":null}`, `{"n":1e-400}`, `{"rate":1.5e300}`,
		`{"NAME":"x"}`, `{"any":[[[{}]]]}`, `{"u":18446744073709551615,"small":-7}`, `{"deep":"x","wait_ns":-1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v body
		if err := Decode(data, &v); err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Decode(%q): %v is not an *Error", data, err)
			}
			return
		}
		var w body
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&w); err != nil || !reflect.DeepEqual(v, w) {
			t.Fatalf("Decode(%q) = %+v; encoding/json: %+v, %v", data, v, w, err)
		}
		if !dupFree(data) {
			t.Fatalf("Decode(%q) took a body with a key twice or a null", data)
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var again body
		if err := Decode(out, &again); err != nil {
			t.Fatalf("Decode(%q) = %+v; its encoding %s is refused: %v", data, v, out, err)
		}
		if out2, _ := json.Marshal(again); !bytes.Equal(out, out2) {
			t.Fatalf("Decode(%q) = %+v; its encoding %s reads as %+v", data, v, out, again)
		}
	})
}
