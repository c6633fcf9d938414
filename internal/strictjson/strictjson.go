package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// MaxDepth bounds the nesting of a value: the quota's deepest body is 3
// levels (the object, "requests", a request).
const MaxDepth = 16

// ErrInvalid is what every error of Decode wraps.
var ErrInvalid = errors.New("strictjson: invalid JSON body")

// Error is a refusal of Decode: Path names the member at fault, as
// requests[2].epoch ("" for the body itself), and Reason says what is
// wrong with it and what is wanted.
type Error struct {
	Path   string
	Reason string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "strictjson: " + e.Reason
	}
	return "strictjson: " + e.Path + ": " + e.Reason
}

// Unwrap makes every *Error match ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

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
func Decode(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &Error{Reason: fmt.Sprintf("decoding into %T: want a non-nil pointer", v)}
	}
	n := nodeOf(rv.Type().Elem())
	w := walkers.Get().(*walker)
	w.lex = lexer{data: data, stack: w.lex.stack[:0]}
	err := w.value(n, 0)
	if err == nil {
		if _, ok := w.lex.peek(); ok {
			err = &Error{Reason: "data after the value: want one JSON value"}
		}
	}
	w.reset()
	walkers.Put(w)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		// The walk refuses what encoding/json would: a disagreement is a
		// bug here, reported rather than hidden.
		return &Error{Reason: err.Error()}
	}
	return nil
}

// walkers keeps the walk's stacks from one body to the next, so that a
// body costs no allocation for them.
var walkers = sync.Pool{New: func() any { return new(walker) }}

// A walker checks one body against a type: it reads tokens as
// encoding/json's Decoder.Token does (lexer), so that it stops where that
// would, with the same words; and it remembers where it is as a stack of
// keys and indices, made into a path only for an error.
type walker struct {
	lex  lexer
	segs []segment // where the walk is: one entry a level below the body
	keys [][]byte  // the keys seen so far in the objects under way, for duplicates
}

// A segment is a step of a path: a key, or an index.
type segment struct {
	key     []byte // unquoted
	index   int
	isIndex bool
}

func (w *walker) reset() {
	clear(w.keys[:cap(w.keys)]) // no body kept alive by the pool
	clear(w.segs[:cap(w.segs)])
	w.lex = lexer{stack: w.lex.stack[:0]}
	w.segs, w.keys = w.segs[:0], w.keys[:0]
}

// path is where the walk is, as requests[2].epoch.
func (w *walker) path() string { return pathOf(w.segs) }

func pathOf(segs []segment) string {
	path := ""
	for _, s := range segs {
		if s.isIndex {
			path += "[" + strconv.Itoa(s.index) + "]"
		} else {
			path = join(path, string(s.key))
		}
	}
	return path
}

// fail refuses the value where the walk is.
func (w *walker) fail(reason string) error { return &Error{Path: w.path(), Reason: reason} }

func (w *walker) malformed(err error) error {
	return w.fail("malformed JSON: " + strings.TrimPrefix(err.Error(), "json: "))
}

// value reads one value; n is the type it decodes into.
func (w *walker) value(n *node, depth int) error {
	tok, err := w.lex.token()
	if err != nil {
		if err == io.EOF {
			if path := w.path(); path != "" {
				return &Error{Path: path, Reason: "the body ends early"}
			}
			return &Error{Reason: "empty body: want a JSON value"}
		}
		return w.malformed(err)
	}
	switch tok.kind {
	case tokNull:
		return w.fail("null: want a value (leave the key out for its default)")
	case tokNumber:
		if !n.plainNumber(w.lex.data[tok.start:tok.end]) {
			if reason := checkNumber(n.t, string(w.lex.data[tok.start:tok.end])); reason != "" {
				return w.fail(reason)
			}
		}
	case tokString:
		if n.kind != kindAny && n.kind != kindString {
			return w.fail(wrongKind(n.t, "a string"))
		}
	case tokTrue, tokFalse:
		if n.kind != kindAny && n.kind != kindBool {
			return w.fail(wrongKind(n.t, "true or false"))
		}
	default: // a delimiter
		if depth >= MaxDepth {
			return w.fail(fmt.Sprintf("nested deeper than %d levels", MaxDepth))
		}
		if tok.kind == tokBeginObject {
			err = w.object(n, depth)
		} else {
			err = w.array(n, depth)
		}
		if err != nil {
			return err
		}
		if _, err := w.lex.token(); err != nil { // the closing delimiter
			return w.malformed(err)
		}
	}
	return nil
}

func (w *walker) array(n *node, depth int) error {
	elem := n
	if n.kind != kindAny {
		if n.kind != kindArray {
			return w.fail(wrongKind(n.t, "an array"))
		}
		elem = n.elem
	}
	k := len(w.segs)
	w.segs = append(w.segs, segment{isIndex: true})
	for i := 0; w.lex.more(); i++ {
		w.segs[k].index = i
		if err := w.value(elem, depth+1); err != nil {
			return err
		}
	}
	w.segs = w.segs[:k]
	return nil
}

func (w *walker) object(n *node, depth int) error {
	elem := n // an object of any: its members are any too
	switch n.kind {
	case kindAny:
	case kindStruct:
	case kindMap:
		elem = n.elem
	default:
		return w.fail(wrongKind(n.t, "an object"))
	}
	seen := keySet{base: len(w.keys)}
	k := len(w.segs)
	for w.lex.more() {
		tok, err := w.lex.token()
		if err != nil {
			return w.malformed(err)
		}
		var key []byte
		if tok.kind == tokString {
			key = w.lex.key(tok)
		}
		w.segs = append(w.segs, segment{key: key})
		vn := elem
		if n.kind == kindStruct {
			i, ok := n.fields.index[string(key)]
			if ok && !seen.addIndex(i) {
				return w.duplicate(key, k)
			}
			if !ok {
				return w.fail(n.fields.unknown(string(key)))
			}
			vn = n.fields.nodes[i]
		} else if !seen.addKey(w, key) {
			return w.duplicate(key, k)
		}
		if err := w.value(vn, depth+1); err != nil {
			return err
		}
		w.segs = w.segs[:k]
	}
	w.keys = w.keys[:seen.base]
	return nil
}

// duplicate refuses key, given twice in the object whose path is the
// walk's first k segments.
func (w *walker) duplicate(key []byte, k int) error {
	return w.fail(fmt.Sprintf("key %q given more than once in %s", clip(string(key)), where(pathOf(w.segs[:k]))))
}

// A keySet is the keys an object has given so far: by field index for a
// struct (a key that is no field is refused at once, so a known field is
// the only one that can come twice), by name for anything else — in a
// slice while it is short, as most objects are, in a map beyond.
type keySet struct {
	bits  uint64   // fields 0 to 63
	more  []uint64 // fields 64 and on
	base  int      // where this object's keys start in walker.keys
	names map[string]struct{}
}

// addIndex adds field i, and says false if it was there.
func (s *keySet) addIndex(i int) bool {
	if i < 64 {
		if s.bits&(1<<i) != 0 {
			return false
		}
		s.bits |= 1 << i
		return true
	}
	i -= 64
	if i/64 >= len(s.more) {
		s.more = append(s.more, make([]uint64, i/64+1-len(s.more))...)
	}
	if s.more[i/64]&(1<<(i%64)) != 0 {
		return false
	}
	s.more[i/64] |= 1 << (i % 64)
	return true
}

// shortKeys is how many keys an object's set keeps in a slice, searched
// in full at each key, before it moves them to a map: a body of many keys
// costs no more than a map's work per key.
const shortKeys = 16

// addKey adds key, and says false if it was there.
func (s *keySet) addKey(w *walker, key []byte) bool {
	if s.names != nil {
		if _, ok := s.names[string(key)]; ok {
			return false
		}
		s.names[string(key)] = struct{}{}
		return true
	}
	for _, k := range w.keys[s.base:] {
		if string(k) == string(key) {
			return false
		}
	}
	if len(w.keys)-s.base < shortKeys {
		w.keys = append(w.keys, key)
		return true
	}
	s.names = make(map[string]struct{}, 2*shortKeys)
	for _, k := range w.keys[s.base:] {
		s.names[string(k)] = struct{}{}
	}
	s.names[string(key)] = struct{}{}
	return true
}

// checkNumber says what is wrong with literal lit for a value of type t
// (nil for any), or "" when t holds it exactly.
func checkNumber(t reflect.Type, lit string) string {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		return fmt.Sprintf("number %s: beyond the range of a float64", clip(lit))
	}
	if f == 0 && !zeroLiteral(lit) {
		return fmt.Sprintf("number %s: too small to hold: it would read as 0", clip(lit))
	}
	if t == nil {
		return ""
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(lit, 10, 64)
		if err != nil || reflect.Zero(t).OverflowInt(n) {
			return fmt.Sprintf("number %s: want an integer, without fraction or exponent, that fits %s", clip(lit), kindName(t))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, err := strconv.ParseUint(lit, 10, 64)
		if err != nil || reflect.Zero(t).OverflowUint(n) {
			return fmt.Sprintf("number %s: want a whole number of at least 0, without fraction or exponent, that fits %s", clip(lit), kindName(t))
		}
	case reflect.Float32:
		if math.Abs(f) > math.MaxFloat32 || (float32(f) == 0 && f != 0) {
			return fmt.Sprintf("number %s: beyond the range of a float32", clip(lit))
		}
	case reflect.Float64:
	default:
		return wrongKind(t, "a number")
	}
	return ""
}

// zeroLiteral says whether a JSON number's digits before any exponent
// are all zeros: 0, -0, 0.000, 0e5.
func zeroLiteral(lit string) bool {
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

// wrongKind is the refusal of a value of the wrong kind for t: got says
// what came.
func wrongKind(t reflect.Type, got string) string {
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
	return fmt.Sprintf("%s: want %s", got, want)
}

func kindName(t reflect.Type) string { return t.Kind().String() }

func join(path, key string) string {
	if path == "" {
		return clip(key)
	}
	return path + "." + clip(key)
}

func where(path string) string {
	if path == "" {
		return "the body"
	}
	return path
}

// clip shortens what a client sent, for a message.
func clip(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}

// A node is what the walk needs to know of a type, worked out once per
// type rather than at every value: what kind of value it takes once
// pointers are followed, its fields or elements, and the range of its
// numbers.
type node struct {
	kind kind
	t    reflect.Type // pointers followed; nil for kindAny
	elem *node        // of a map, slice or array
	// fields, of a struct.
	fields *fields
	// The range of an integer kind.
	min    int64
	max    uint64
	signed bool
}

type kind uint8

const (
	kindAny    kind = iota // an interface, or a type that decodes itself: generic rules only
	kindString             // a string kind
	kindBool
	kindInt   // any integer kind
	kindFloat // float32 or float64
	kindStruct
	kindMap   // with keys of a string kind
	kindArray // a slice or an array
	kindOther // a map with other keys, a channel, a complex number, …: only its wrong kinds
)

// fields maps a struct's JSON names to its fields, as encoding/json sees
// them (embedded structs' fields promoted).
type fields struct {
	index map[string]int
	nodes []*node
	names []string // sorted
	takes string   // names, quoted, for a message
}

// unknown is the refusal of key, which names no field: the field it
// names when case is ignored, if any (of two such names, the first in
// order), or the fields there are.
func (f *fields) unknown(key string) string {
	for _, name := range f.names {
		if strings.EqualFold(name, key) || foldEqual(name, key) {
			return fmt.Sprintf("unknown field (names are case-sensitive: want %q)", name)
		}
	}
	return "unknown field; this object takes " + f.takes
}

// plainNumber says whether n surely holds literal lit, a JSON number,
// without the parsing checkNumber does: true for an integer of at most
// 18 digits that fits n, false for anything else (fractions, exponents,
// long literals, refusals), which checkNumber then judges. Of such an
// integer, all checkNumber asks of a float holds (finite, within
// float32's range, 0 only when written as 0), so only an integer kind's
// range remains to check.
func (n *node) plainNumber(lit []byte) bool {
	neg := lit[0] == '-'
	digits := lit
	if neg {
		digits = lit[1:]
	}
	if len(digits) > 18 {
		return false
	}
	var u uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
		u = u*10 + uint64(c-'0')
	}
	switch n.kind {
	case kindAny, kindFloat:
		return true
	case kindInt:
		if !n.signed {
			return !neg && u <= n.max // as strconv.ParseUint, which takes no sign
		}
		if neg {
			return -int64(u) >= n.min
		}
		return u <= n.max
	}
	return false
}

// nodes caches a node per type, built complete before it is published,
// as types may refer to themselves.
var (
	nodes   sync.Map // reflect.Type → *node
	buildMu sync.Mutex
	built   = map[reflect.Type]*node{} // under buildMu
)

func nodeOf(t reflect.Type) *node {
	if n, ok := nodes.Load(t); ok {
		return n.(*node)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	n := build(t)
	nodes.Store(t, n)
	return n
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// custom says whether t decodes itself: the walk then checks only the
// generic rules below it.
func custom(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || p.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || p.Implements(textUnmarshaler)
}

// build makes t's node; the caller holds buildMu.
func build(t reflect.Type) *node {
	if n, ok := built[t]; ok {
		return n
	}
	n := &node{}
	built[t] = n
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface || custom(t) {
		return n // kindAny
	}
	n.t = t
	switch t.Kind() {
	case reflect.String:
		n.kind = kindString
	case reflect.Bool:
		n.kind = kindBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n.kind, n.signed = kindInt, true
		n.min, n.max = -1<<(t.Bits()-1), 1<<(t.Bits()-1)-1
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n.kind, n.max = kindInt, math.MaxUint64>>(64-t.Bits())
	case reflect.Float32, reflect.Float64:
		n.kind = kindFloat
	case reflect.Struct:
		n.kind = kindStruct
		byName := map[string]reflect.Type{}
		addFields(byName, t, 0)
		f := &fields{index: make(map[string]int, len(byName))}
		for name := range byName {
			f.names = append(f.names, name)
		}
		slices.Sort(f.names)
		quoted := make([]string, len(f.names))
		for i, name := range f.names {
			f.index[name] = i
			f.nodes = append(f.nodes, build(byName[name]))
			quoted[i] = strconv.Quote(name)
		}
		f.takes = strings.Join(quoted, ", ")
		n.fields = f
	case reflect.Map:
		n.kind = kindOther
		if t.Key().Kind() == reflect.String {
			n.kind, n.elem = kindMap, build(t.Elem())
		}
	case reflect.Slice, reflect.Array:
		n.kind, n.elem = kindArray, build(t.Elem())
	default:
		n.kind = kindOther
	}
	return n
}

func addFields(m map[string]reflect.Type, t reflect.Type, depth int) {
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
				addFields(m, ft, depth+1)
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

// foldEqual is encoding/json's key match beyond ASCII: it takes the
// Kelvin sign for k and the long s for s.
func foldEqual(a, b string) bool {
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

// unquote is a key, raw with its quotes, as encoding/json reads it: its
// bytes when it is plain ASCII, or has no escape and is valid UTF-8, else
// what encoding/json makes of it (escapes resolved, bad UTF-8 replaced),
// by asking it.
func unquote(raw []byte, plain bool) []byte {
	s := raw[1 : len(raw)-1]
	if plain || bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return s
	}
	var out string
	if err := json.Unmarshal(raw, &out); err != nil {
		// The lexer takes what encoding/json takes: were they to disagree,
		// Decode's json.Unmarshal refuses the body and says so.
		return s
	}
	return []byte(out)
}
