package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/afloat/afloat/internal/strictjson"
)

// A config file in JSON is read by a JSON lexer into the tree YAML's
// parser builds (yaml.Node), and decoded and checked from there as a YAML
// file is: one decoder, one set of checks, one meaning for every key —
// only the reading differs. YAML's parser builds that tree at about 5 MB
// a second on the 2-core machine the quota is measured on: a config of
// 100,000 tenants (7 MB) took a region's agent 1.1–1.5 s of CPU to read,
// most of its start, which a restarted region waits for
// (docs/benchmarks.md, "The quota at scale"). A JSON document is YAML,
// so reading it either way means the same: FuzzConfigJSON holds the two
// to it.

// isJSON says whether data may be a JSON document the JSON reader reads
// as YAML's parser would: an object, after any white space, in valid
// UTF-8 (which YAML's parser refuses and encoding/json replaces), with
// no tab (which YAML's parser refuses in places JSON allows it).
func isJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \r\n")
	return len(t) > 0 && t[0] == '{' && bytes.IndexByte(data, '\t') < 0 && yamlReadable(data)
}

// yamlReadable says whether YAML's reader takes every character of data:
// valid UTF-8, and no control character but tab, line feed, carriage
// return and next line (go.yaml.in/yaml/v3's reader refuses the others;
// encoding/json takes them in strings).
func yamlReadable(data []byte) bool {
	for i := 0; i < len(data); {
		c := data[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return false
		case r == 0x85, r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
		i += n
	}
	return true
}

// maxJSONDepth bounds nesting; a config is a few levels deep.
const maxJSONDepth = 100

// jsonNode reads a JSON document into a yaml.Node tree: a document node
// holding its value, each node with its line.
func jsonNode(data []byte) (*yaml.Node, error) {
	r := &jsonReader{lex: strictjson.NewLexer(data), data: data}
	root, err := r.value(0)
	if err != nil {
		return nil, err
	}
	if tok, err := r.lex.Next(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("line %d: more after the JSON document", r.line(tok.Offset))
	}
	return &yaml.Node{Kind: yaml.DocumentNode, Line: 1, Column: 1, Content: []*yaml.Node{root}}, nil
}

type jsonReader struct {
	lex   *strictjson.Lexer
	data  []byte
	lines int         // newlines before at
	at    int         // the offset lines counts to
	slab  []yaml.Node // nodes to hand out: allocated 1,024 at a time
}

// node is a new node of the tree.
func (r *jsonReader) node(kind yaml.Kind, tag, value string, line int) *yaml.Node {
	if len(r.slab) == 0 {
		r.slab = make([]yaml.Node, 1024)
	}
	n := &r.slab[0]
	r.slab = r.slab[1:]
	n.Kind, n.Tag, n.Value, n.Line, n.Column = kind, tag, value, line, 1
	return n
}

// line is the line of offset off, which only grows.
func (r *jsonReader) line(off int) int {
	if off > r.at && off <= len(r.data) {
		r.lines += bytes.Count(r.data[r.at:off], []byte{'\n'})
		r.at = off
	}
	return r.lines + 1
}

// next is the next token; the document's end within a value is an
// error.
func (r *jsonReader) next() (strictjson.Token, error) {
	tok, err := r.lex.Next()
	if errors.Is(err, io.EOF) {
		return tok, fmt.Errorf("line %d: the JSON document ends early", r.line(len(r.data)))
	}
	if err != nil {
		return tok, fmt.Errorf("line %d: %w", r.line(len(r.data)), err)
	}
	return tok, nil
}

func (r *jsonReader) value(depth int) (*yaml.Node, error) {
	tok, err := r.next()
	if err != nil {
		return nil, err
	}
	line := r.line(tok.Offset)
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("line %d: nested more than %d deep", line, maxJSONDepth)
	}
	scalar := func(tag, value string) *yaml.Node { return r.node(yaml.ScalarNode, tag, value, line) }
	switch tok.Kind {
	case strictjson.BeginObject:
		n := r.node(yaml.MappingNode, "!!map", "", line)
		for r.lex.More() {
			k, err := r.next()
			if err != nil {
				return nil, err
			}
			key := r.node(yaml.ScalarNode, "!!str", k.Unquote(), r.line(k.Offset))
			key.Style = yaml.DoubleQuotedStyle
			v, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, key, v)
		}
		if _, err := r.next(); err != nil { // }
			return nil, err
		}
		return n, nil
	case strictjson.BeginArray:
		n := r.node(yaml.SequenceNode, "!!seq", "", line)
		for r.lex.More() {
			v, err := r.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		if _, err := r.next(); err != nil { // ]
			return nil, err
		}
		return n, nil
	case strictjson.String:
		n := scalar("!!str", tok.Unquote())
		n.Style = yaml.DoubleQuotedStyle
		return n, nil
	case strictjson.Number:
		// Untagged: YAML resolves it as it resolves the same number
		// written plain (1e400, too large for a float, is a string that
		// no number field takes).
		return scalar("", string(tok.Raw)), nil
	case strictjson.True:
		return scalar("", "true"), nil
	case strictjson.False:
		return scalar("", "false"), nil
	case strictjson.Null:
		return scalar("", "null"), nil
	}
	return nil, fmt.Errorf("line %d: a %v where a value goes", line, tok.Kind)
}
