package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// wide has a field of every kind the walk tells apart, so that a body
// can go wrong in every way against it. No two of its JSON names are
// equal when case is ignored: for such a pair the reference names
// whichever its map gives first.
type wide struct {
	body
	F32      float32           `json:"f32"`
	F64      float64           `json:"f64"`
	I8       int8              `json:"i8"`
	U8       uint8             `json:"u8"`
	I16      int16             `json:"i16"`
	U16      uint16            `json:"u16"`
	I32      int32             `json:"i32"`
	U32      uint32            `json:"u32"`
	I        int               `json:"i"`
	UI       uint              `json:"ui"`
	Uptr     uintptr           `json:"uptr"`
	Arr      [2]int            `json:"arr"`
	PP       **int             `json:"pp"`
	T        time.Time         `json:"t"`
	PT       *time.Time        `json:"pt"`
	Raw      json.RawMessage   `json:"raw"`
	IntKeys  map[int]string    `json:"int_keys"`
	Named    named             `json:"named"`
	ByName   map[named]float32 `json:"by_name"`
	C        complex128        `json:"c"`
	Bytes    []byte            `json:"bytes"`
	Self     *wide             `json:"self"`
	Stringer fmt.Stringer      `json:"stringer"`
	Kelvin   string            `json:"\u212ak"`
	Untagged string
	*embPtr
}

type named string

type embPtr struct {
	Inner []map[string]*wide `json:"inner"`
}

// targets are the types every body is decoded into, by both decoders.
var targets = []func() any{
	func() any { return new(body) },
	func() any { return new(wide) },
	func() any { return new(renewal) },
	func() any { return new(any) },
	func() any { return new(map[string]any) },
	func() any { return new(map[string]int8) },
	func() any { return new([]uint16) },
	func() any { return new(string) },
	func() any { return new(*float32) },
	func() any { return new(time.Time) },
	func() any { return new([3]bool) },
}

// same decodes data into each of targets with Decode and with the
// reference and says how they differ, "" when they do not.
func same(data []byte, targets []func() any) string {
	for _, target := range targets {
		v, ref := target(), target()
		err, refErr := Decode(data, v), refDecode(data, ref)
		if fmt.Sprint(err) != fmt.Sprint(refErr) {
			return fmt.Sprintf("into %T: Decode: %v; reference: %v", v, err, refErr)
		}
		var e, re *Error
		if errors.As(err, &e) != errors.As(refErr, &re) || (e != nil && *e != *re) {
			return fmt.Sprintf("into %T: Decode: %#v; reference: %#v", v, e, re)
		}
		if !reflect.DeepEqual(v, ref) {
			return fmt.Sprintf("into %T: Decode: %+v; reference: %+v", v, v, ref)
		}
	}
	return ""
}

// sameSeeds go wrong, or nearly, in each way the walk and the lexer
// tell apart; TestSameAsReference also tries every prefix of each and
// every byte of it replaced.
var sameSeeds = []string{
	`{"name":"acme","n":3,"u":7,"small":-7,"rate":1.5,"on":true,"costs":{"/a":2,"/b":-1},"list":[{"tenant":"t","epoch":1}],"wait_ns":5,"any":[1,"x",{"k":[true,false]}],"deep":"d"}`,
	`{"f32":3.4e38,"f64":-1e-300,"i8":-128,"u8":255,"i16":32767,"u16":65535,"i32":-2147483648,"u32":4294967295,"i":9223372036854775807,"ui":18446744073709551615,"uptr":1}`,
	`{"f32":3.5e38,"f32":1e-46,"i8":128,"u8":-0,"i":-9223372036854775809,"ui":18446744073709551616}`,
	`{"arr":[1,2,3],"pp":5,"t":"2026-01-02T03:04:05Z","pt":"2026-01-02T03:04:05+01:00","raw":{"a":[1,{"b":null}]},"int_keys":{"1":"a"}}`,
	`{"t":"yesterday","pt":1,"raw":{"a":1,"a":2},"named":"x","by_name":{"a":1.5,"b":1e39},"c":1,"bytes":"AQI=","stringer":{}}`,
	`{"self":{"self":{"self":{"inner":[{"k":{"name":"x","NAME":"y"}}]}}},"inner":[],"Untagged":"u","untagged":1,"ʞ":1,"kk":1,"\u212ak":2}`,
	`{"incarnation":1,"requests":[{"tenant":"acme","region":"eu","seq":1,"holding":0,"epoch":2,"demand":1000000,"balance":-5}],"patience_ms":100}`,
	`{"requests":[{"tenant":"a\u0062c","region":"\ud800","seq":1.0,"demand":1e2,"balance":0.0e-5}]}`,
	`{"\u006eame":"a","name":"b","\"":1,"\\":2,"\/":3,"\b\f\n\r\t":4,"é":5,"` + "\xff\xfe" + `":6,"` + "\xfd" + `":7}`,
	`{"":{"":{"":1,"":2}}}`, `{"":` + "\n", `[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]`, `{"any":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":1}}}}}}}}}}}}}}}}}`,
	`[1,2,]`, `[1 2]`, `[1x]`, `[1,}`, `[}`, `{]`, `{1:2}`, `{"a" 1}`, `{"a":1 "b":2}`, `{"a":1,}`, `{"a":1]`, `{"a"::1}`, `{"a":,}`, `{,}`, `[,1]`, `[:]`,
	`{"n":01}`, `{"n":-}`, `{"n":-x}`, `{"n":1.}`, `{"n":1.x}`, `{"n":1e}`, `{"n":1e+}`, `{"n":1ex}`, `{"n":.5}`, `{"n":+1}`, `{"n":1E5}`, `{"n":-0.0}`, `{"n":0e-999}`,
	`{"name":"a` + "\x01" + `b"}`, `{"name":"\x"}`, `{"name":"\u12G4"}`, `{"name":"\u"}`, `{"name":tru}`, `{"name":trux}`, `{"name":fals}`, `{"name":nul}`, `{"name":nulx}`, `{"name":'a'}`,
	`{"on":true,"on":false}`, `{"on":"true"}`, `{"list":[{"tenant":"a","epoch":-1}]}`, `{"costs":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"r":18,"a":19}}`,
	`"x"`, `1`, `-1.5e-3`, `true`, `null`, `[true,false,true]`, `[true,false,true,false]`, `{} x`, `{}}`, `{}]`, `1 2`, "\t\r\n {}\t\r\n ", "\f{}", `{"name":"` + strings.Repeat("ü", 50) + `"}`,
	`{"` + strings.Repeat("é", 45) + `":1,"` + strings.Repeat("é", 45) + `":2}`, `{"nAme":1}`, `{"wait_NS":1}`, `{"inneR":1}`, `{"Stringer":1}`,
}

// TestSameAsReference holds Decode to the reference on sameSeeds into
// every target, on every prefix of each into the targets of bodies (the
// body's end at every point), and on each with every byte replaced in
// turn by one that matters to JSON's grammar into any (every token of
// the body read, whatever its kinds). Fewer targets than the fuzz test
// for time: the test runs under -race, where the reference is slow.
func TestSameAsReference(t *testing.T) {
	for i, s := range sameSeeds {
		if d := same([]byte(s), targets); d != "" {
			t.Errorf("step %d: %q: %s", i, s, d)
		}
		for n := range len(s) {
			if d := same([]byte(s[:n]), targets[:4]); d != "" {
				t.Errorf("step %d: %q, its first %d bytes: %s", i, s, n, d)
			}
			for _, c := range []byte("\x00\"\\,:[]{}0-.t\xff") {
				b := []byte(s)
				b[n] = c
				if d := same(b, targets[3:4]); d != "" {
					t.Errorf("step %d: %q, byte %d made %q: %s", i, s, n, c, d)
				}
			}
		}
	}
}

// FuzzSameAsReference: Decode accepts, refuses and words every body as
// the reference does, and decodes what it accepts to the same value.
func FuzzSameAsReference(f *testing.F) {
	for _, s := range sameSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if d := same(data, targets); d != "" {
			t.Fatalf("%q: %s", data, d)
		}
	})
}

// TestDecodeConcurrently: Decode's caches (a type's node, the walkers)
// are safe for concurrent use, the race detector watching; each body is
// decoded as it is alone.
func TestDecodeConcurrently(t *testing.T) {
	type fresh struct { // a type no other test has made a node for
		A []map[string]*fresh `json:"a"`
		B int8                `json:"b"`
	}
	bodies := []string{`{"a":[{"x":{"b":1}}],"b":2}`, `{"a":[{"x":{"b":1,"b":2}}]}`, `{"b":300}`}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				s := bodies[(g+i)%len(bodies)]
				var v, ref fresh
				err, refErr := Decode([]byte(s), &v), refDecode([]byte(s), &ref)
				if fmt.Sprint(err) != fmt.Sprint(refErr) || !reflect.DeepEqual(v, ref) {
					t.Errorf("step %d: %s: Decode %+v, %v; reference %+v, %v", i, s, v, err, ref, refErr)
				}
			}
		})
	}
	wg.Wait()
}
