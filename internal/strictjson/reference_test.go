package strictjson

// The decoder as it was before it was made fast (an allocation per token,
// a path string per value, a map per object), kept word for word as the
// reference the fast one is held to: Decode must accept, refuse and word
// every body as refDecode does (TestSameAsReference,
// FuzzSameAsReference). Only its identifiers are renamed, with a ref
// prefix; its comments keep the old names.

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Decode decodes data, one JSON value, into v (a non-nil pointer), as
// encoding/json does, but refuses what encoding/json lets through:
//
//   - a key given twice in one object, at any depth;
//   - a key that names a field only when case is ignored ("Tenant" for
//     "tenant": encoding/json takes it, so two spellings of one field
//     could otherwise both be given), and any unknown key;
//   - null, anywhere: a field is either given a value or left out;
//   - for an integer field, a number with a fraction or an exponent (1.5,
//     1e3) or beyond the field's range; for any number, one other than
//     zero that reads as zero (1e-400) or beyond the float64 range;
//   - a value of the wrong kind (a string for a number, …);
//   - nesting deeper than MaxDepth;
//   - an empty body, and anything but white space after the value.
//
// The check walks the value against v's type first; only a value that
// passes is decoded, so that on error v is unchanged. Types with their
// own UnmarshalJSON or UnmarshalText are checked for the generic rules
// only (duplicates, null, numbers, depth). It is safe for concurrent use.
func refDecode(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &Error{Reason: fmt.Sprintf("decoding into %T: want a non-nil pointer", v)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := refWalk(dec, rv.Type().Elem(), "", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return &Error{Reason: "data after the value: want one JSON value"}
	}
	if err := json.Unmarshal(data, v); err != nil {
		// The walk refuses what encoding/json would: a disagreement is a
		// bug here, reported rather than hidden.
		return &Error{Reason: err.Error()}
	}
	return nil
}

var (
	refJsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	refTextUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// custom says whether t decodes itself: the walk then checks only the
// generic rules below it.
func refCustom(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(refJsonUnmarshaler) || p.Implements(refJsonUnmarshaler) ||
		t.Implements(refTextUnmarshaler) || p.Implements(refTextUnmarshaler)
}

// walk reads one value; t is the type it decodes into, nil for any.
func refWalk(dec *json.Decoder, t reflect.Type, path string, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			if path == "" {
				return &Error{Reason: "empty body: want a JSON value"}
			}
			return &Error{Path: path, Reason: "the body ends early"}
		}
		return refMalformed(path, err)
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (t.Kind() == reflect.Interface || refCustom(t)) {
		t = nil
	}
	switch tok := tok.(type) {
	case nil:
		return &Error{Path: path, Reason: "null: want a value (leave the key out for its default)"}
	case json.Number:
		return refCheckNumber(t, path, string(tok))
	case string:
		if t != nil && t.Kind() != reflect.String {
			return refWrongKind(t, path, "a string")
		}
	case bool:
		if t != nil && t.Kind() != reflect.Bool {
			return refWrongKind(t, path, "true or false")
		}
	case json.Delim:
		if depth >= MaxDepth {
			return &Error{Path: path, Reason: fmt.Sprintf("nested deeper than %d levels", MaxDepth)}
		}
		if tok == '{' {
			if err := refWalkObject(dec, t, path, depth); err != nil {
				return err
			}
		} else {
			var elem reflect.Type
			if t != nil {
				if k := t.Kind(); k != reflect.Slice && k != reflect.Array {
					return refWrongKind(t, path, "an array")
				}
				elem = t.Elem()
			}
			for i := 0; dec.More(); i++ {
				if err := refWalk(dec, elem, path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
					return err
				}
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return refMalformed(path, err)
		}
	}
	return nil
}

func refWalkObject(dec *json.Decoder, t reflect.Type, path string, depth int) error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fields = refFieldsOf(t)
		case reflect.Map:
			if t.Key().Kind() != reflect.String {
				return refWrongKind(t, path, "an object")
			}
			elem = t.Elem()
		default:
			return refWrongKind(t, path, "an object")
		}
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return refMalformed(path, err)
		}
		key, _ := tok.(string)
		member := refJoin(path, key)
		if seen[key] {
			return &Error{Path: member, Reason: fmt.Sprintf("key %q given more than once in %s", refClip(key), refWhere(path))}
		}
		seen[key] = true
		vt := elem
		if fields != nil {
			ft, ok := fields[key]
			if !ok {
				for name := range fields {
					if strings.EqualFold(name, key) || refFoldEqual(name, key) {
						return &Error{Path: member, Reason: fmt.Sprintf("unknown field (names are case-sensitive: want %q)", name)}
					}
				}
				return &Error{Path: member, Reason: "unknown field; this object takes " + refNames(fields)}
			}
			vt = ft
		}
		if err := refWalk(dec, vt, member, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// checkNumber refuses a literal its field cannot hold exactly.
func refCheckNumber(t reflect.Type, path, lit string) error {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		return &Error{Path: path, Reason: fmt.Sprintf("number %s: beyond the range of a float64", refClip(lit))}
	}
	if f == 0 && !refZeroLiteral(lit) {
		return &Error{Path: path, Reason: fmt.Sprintf("number %s: too small to hold: it would read as 0", refClip(lit))}
	}
	if t == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(lit, 10, 64)
		if err != nil || reflect.Zero(t).OverflowInt(n) {
			return &Error{Path: path, Reason: fmt.Sprintf("number %s: want an integer, without fraction or exponent, that fits %s", refClip(lit), refKindName(t))}
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, err := strconv.ParseUint(lit, 10, 64)
		if err != nil || reflect.Zero(t).OverflowUint(n) {
			return &Error{Path: path, Reason: fmt.Sprintf("number %s: want a whole number of at least 0, without fraction or exponent, that fits %s", refClip(lit), refKindName(t))}
		}
	case reflect.Float32:
		if math.Abs(f) > math.MaxFloat32 || (float32(f) == 0 && f != 0) {
			return &Error{Path: path, Reason: fmt.Sprintf("number %s: beyond the range of a float32", refClip(lit))}
		}
	case reflect.Float64:
	default:
		return refWrongKind(t, path, "a number")
	}
	return nil
}

// zeroLiteral says whether a JSON number's digits before any exponent
// are all zeros: 0, -0, 0.000, 0e5.
func refZeroLiteral(lit string) bool {
	for _, c := range lit {
		switch {
		case c == 'e' || c == 'E':
			return true
		case c >= '1' && c <= '9':
			return false
		}
	}
	return true
}

// wrongKind refuses a value of the wrong kind: got says what came.
func refWrongKind(t reflect.Type, path, got string) error {
	want := "a value of type " + t.String()
	switch t.Kind() {
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Struct, reflect.Map:
		want = "an object"
	case reflect.Slice, reflect.Array:
		want = "an array"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		want = "a number"
	}
	return &Error{Path: path, Reason: fmt.Sprintf("%s: want %s", got, want)}
}

func refKindName(t reflect.Type) string { return t.Kind().String() }

// fields maps a struct's JSON names to their types, as encoding/json
// sees them (embedded structs' fields promoted), cached per type.
var refFieldCache sync.Map // reflect.Type → map[string]reflect.Type

func refFieldsOf(t reflect.Type) map[string]reflect.Type {
	if m, ok := refFieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	refAddFields(m, t, 0)
	refFieldCache.Store(t, m)
	return m
}

func refAddFields(m map[string]reflect.Type, t reflect.Type, depth int) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && depth < 8 {
				refAddFields(m, ft, depth+1)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := m[name]; !dup {
			m[name] = f.Type
		}
	}
}

func refNames(fields map[string]reflect.Type) string {
	list := make([]string, 0, len(fields))
	for name := range fields {
		list = append(list, strconv.Quote(name))
	}
	slices.Sort(list)
	return strings.Join(list, ", ")
}

// foldEqual is encoding/json's key match beyond ASCII: it takes the
// Kelvin sign for k and the long s for s.
func refFoldEqual(a, b string) bool {
	fold := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch r {
			case '\u212a':
				return 'k'
			case '\u017f':
				return 's'
			}
			return r
		}, strings.ToLower(s))
	}
	return fold(a) == fold(b)
}

func refMalformed(path string, err error) error {
	return &Error{Path: path, Reason: "malformed JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
}

func refJoin(path, key string) string {
	if path == "" {
		return refClip(key)
	}
	return path + "." + refClip(key)
}

func refWhere(path string) string {
	if path == "" {
		return "the body"
	}
	return path
}

// clip shortens what a client sent, for a message.
func refClip(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}
