package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// checkNumbers walks a config file's YAML against the Go type it decodes
// into and refuses the numbers the YAML decoder reads leniently: a
// fraction for an integer field (it truncates 2.5 to 2, and reads 1e-400
// as 0), a float too small to hold (1e-400 read as 0), and null for a
// number or a duration (read as 0, which for an optional field is its
// default: a field is either given a value or left out).
func checkNumbers(n *yaml.Node, t reflect.Type, path string, depth int) error {
	if n == nil || depth > 64 {
		return nil
	}
	for n.Kind == yaml.DocumentNode || n.Kind == yaml.AliasNode {
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		} else if len(n.Content) == 1 {
			n = n.Content[0]
		} else {
			return nil
		}
		if n == nil {
			return nil
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s "+format, append([]any{ErrConfigFile, n.Line, path}, args...)...)
	}
	if t == reflect.TypeFor[time.Duration]() {
		if n.ShortTag() == "!!null" {
			return bad("null: want a duration such as 10s (leave the key out for its default)")
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil // the decoder says what is wrong
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			f, ok := yamlField(t, key)
			if !ok {
				// As the decoder's KnownFields words it.
				return fmt.Errorf("%w: line %d: field %s not found in type %s", ErrConfigFile, n.Content[i].Line, key, t)
			}
			if err := checkNumbers(n.Content[i+1], f, join(path, key), depth+1); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkNumbers(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), depth+1); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		for i, c := range n.Content {
			if err := checkNumbers(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		switch n.ShortTag() {
		case "!!int":
		case "!!null":
			return bad("null: want a whole number (leave the key out for its default)")
		default:
			return bad("%s: want a whole number", clipValue(n.Value))
		}
	case reflect.Float32, reflect.Float64:
		switch n.ShortTag() {
		case "!!null":
			return bad("null: want a number (leave the key out for its default)")
		case "!!float":
			lit := strings.ReplaceAll(n.Value, "_", "")
			if f, err := strconv.ParseFloat(lit, 64); err == nil && f == 0 && strings.ContainsAny(mantissa(lit), "123456789") {
				return bad("%s: too small to hold: it would read as 0", clipValue(n.Value))
			}
		}
	}
	return nil
}

// yamlField finds the field of struct t that key names.
func yamlField(t reflect.Type, key string) (reflect.Type, bool) {
	fields, ok := yamlFields.Load(t)
	if !ok {
		m := map[string]reflect.Type{}
		for i := range t.NumField() {
			if name, ok := yamlKey(t.Field(i)); ok {
				m[name] = t.Field(i).Type
			}
		}
		fields, _ = yamlFields.LoadOrStore(t, m)
	}
	f, ok := fields.(map[string]reflect.Type)[key]
	return f, ok
}

// yamlFields caches each struct type's keys (yamlField): a file of
// 100,000 tenants asks for 800,000 keys.
var yamlFields sync.Map // reflect.Type → map[string]reflect.Type

// yamlKey is the key that names f in the file, as the YAML decoder reads
// it: its yaml tag's name, else its name in lower case; false for a field
// the decoder never sets (unexported, or tagged "-"). The configuration
// reference lists every key (TestReferenceListsEveryField).
func yamlKey(f reflect.StructField) (string, bool) {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name, f.IsExported() && name != "-"
}

// mantissa is a number's digits before its exponent.
func mantissa(lit string) string {
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		return lit[:i]
	}
	return lit
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func clipValue(s string) string {
	if len(s) > 40 {
		return strconv.Quote(s[:40] + "…")
	}
	return strconv.Quote(s)
}
