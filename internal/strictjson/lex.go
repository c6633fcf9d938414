package strictjson

import (
	"io"
	"strconv"
	"unicode/utf8"
)

// A lexer reads a body's tokens as encoding/json's Decoder.Token does,
// with UseNumber: the same tokens, and the same errors at the same places
// in the same words, so that Decode words its refusals as encoding/json's
// Decoder does (held to the walk on Decoder.Token it replaced:
// reference_test.go). It allocates nothing: a token is where it lies in
// the body, not an interface. Its states and their names are
// Decoder.Token's (encoding/json/stream.go), and its scan of a string,
// number or literal follows encoding/json's scanner, whose errors it
// words (scanner.go).
//
// github.com/go-json-experiment/json/jsontext reads tokens without
// allocating too, but it words its errors its own way and stops at other
// places (it refuses bad UTF-8, which encoding/json replaces): Decode's
// refusals would change with it, and the walk would no longer agree with
// encoding/json, which decodes what the walk takes.
type lexer struct {
	data  []byte
	pos   int
	state tokenState
	stack []tokenState
}

type tokenState uint8

const (
	tokenTopValue tokenState = iota
	tokenArrayStart
	tokenArrayValue
	tokenArrayComma
	tokenObjectStart
	tokenObjectKey
	tokenObjectColon
	tokenObjectValue
	tokenObjectComma
)

// A token is one of the body: data[start:end] for a string (with its
// quotes) or a number.
type token struct {
	kind       tokenKind
	start, end int
	plain      bool // a string of ASCII without escapes: its bytes are its value
}

type tokenKind uint8

const (
	tokString tokenKind = iota + 1
	tokNumber
	tokTrue
	tokFalse
	tokNull
	tokBeginArray
	tokEndArray
	tokBeginObject
	tokEndObject
)

// syntaxError is a *json.SyntaxError's message.
type syntaxError string

func (e syntaxError) Error() string { return string(e) }

// peek skips white space and returns the next byte, false at the end.
func (l *lexer) peek() (byte, bool) {
	for ; l.pos < len(l.data); l.pos++ {
		switch c := l.data[l.pos]; c {
		case ' ', '\t', '\r', '\n':
		default:
			return c, true
		}
	}
	return 0, false
}

// more is Decoder.More.
func (l *lexer) more() bool {
	c, ok := l.peek()
	return ok && c != ']' && c != '}'
}

func (l *lexer) valueAllowed() bool {
	switch l.state {
	case tokenTopValue, tokenArrayStart, tokenArrayValue, tokenObjectValue:
		return true
	}
	return false
}

func (l *lexer) valueEnd() {
	switch l.state {
	case tokenArrayStart, tokenArrayValue:
		l.state = tokenArrayComma
	case tokenObjectValue:
		l.state = tokenObjectComma
	}
}

// token is Decoder.Token: io.EOF at the end of the body.
func (l *lexer) token() (token, error) {
	for {
		c, ok := l.peek()
		if !ok {
			return token{}, io.EOF
		}
		switch c {
		case '[', '{':
			if !l.valueAllowed() {
				return token{}, l.tokenError(c)
			}
			l.pos++
			l.stack = append(l.stack, l.state)
			if c == '[' {
				l.state = tokenArrayStart
				return token{kind: tokBeginArray}, nil
			}
			l.state = tokenObjectStart
			return token{kind: tokBeginObject}, nil
		case ']':
			if l.state != tokenArrayStart && l.state != tokenArrayComma {
				return token{}, l.tokenError(c)
			}
			l.pos++
			l.pop()
			return token{kind: tokEndArray}, nil
		case '}':
			if l.state != tokenObjectStart && l.state != tokenObjectComma {
				return token{}, l.tokenError(c)
			}
			l.pos++
			l.pop()
			return token{kind: tokEndObject}, nil
		case ':':
			if l.state != tokenObjectColon {
				return token{}, l.tokenError(c)
			}
			l.pos++
			l.state = tokenObjectValue
			continue
		case ',':
			switch l.state {
			case tokenArrayComma:
				l.pos++
				l.state = tokenArrayValue
				continue
			case tokenObjectComma:
				l.pos++
				l.state = tokenObjectKey
				continue
			}
			return token{}, l.tokenError(c)
		case '"':
			if l.state == tokenObjectStart || l.state == tokenObjectKey {
				tok, err := l.scalar()
				if err != nil {
					return token{}, err
				}
				l.state = tokenObjectColon
				return tok, nil
			}
		}
		if !l.valueAllowed() {
			return token{}, l.tokenError(c)
		}
		tok, err := l.scalar()
		if err != nil {
			return token{}, err
		}
		l.valueEnd()
		return tok, nil
	}
}

func (l *lexer) pop() {
	l.state = l.stack[len(l.stack)-1]
	l.stack = l.stack[:len(l.stack)-1]
	l.valueEnd()
}

// tokenError is Decoder.Token's error for c where it cannot come.
func (l *lexer) tokenError(c byte) error {
	var context string
	switch l.state {
	case tokenTopValue, tokenArrayStart, tokenArrayValue, tokenObjectValue:
		context = " looking for beginning of value"
	case tokenArrayComma:
		context = " after array element"
	case tokenObjectKey:
		context = " looking for beginning of object key string"
	case tokenObjectColon:
		context = " after object key"
	case tokenObjectComma:
		context = " after object key:value pair"
	}
	return syntaxError("invalid character " + quoteChar(c) + context)
}

// scanError is the scanner's error for c in a value.
func scanError(c byte, context string) error {
	return syntaxError("invalid character " + quoteChar(c) + " " + context)
}

// quoteChar formats c as encoding/json's messages do.
func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	s := strconv.Quote(string(c))
	return "'" + s[1:len(s)-1] + "'"
}

// scalar reads the string, number or literal at l.pos, as the scanner
// reads a top-level value: it ends where its grammar does (what follows
// is the next token's business), and the body's end inside it is
// io.ErrUnexpectedEOF.
func (l *lexer) scalar() (token, error) {
	d, start := l.data, l.pos
	i := start
	tok := token{start: start}
	var word string // of a literal
	switch c := d[i]; {
	case c == '"':
		tok.kind, tok.plain = tokString, true
		for i++; ; i++ {
			if i >= len(d) {
				return token{}, io.ErrUnexpectedEOF
			}
			c := d[i]
			if c == '"' {
				i++
				break
			}
			if c < 0x20 {
				return token{}, scanError(c, "in string literal")
			}
			if c >= utf8.RuneSelf {
				tok.plain = false
			}
			if c != '\\' {
				continue
			}
			tok.plain = false
			if i++; i >= len(d) {
				return token{}, io.ErrUnexpectedEOF
			}
			switch d[i] {
			case 'b', 'f', 'n', 'r', 't', '\\', '/', '"':
			case 'u':
				for range 4 {
					if i++; i >= len(d) {
						return token{}, io.ErrUnexpectedEOF
					}
					if !isHex(d[i]) {
						return token{}, scanError(d[i], `in \u hexadecimal character escape`)
					}
				}
			default:
				return token{}, scanError(d[i], "in string escape code")
			}
		}
	case c == '-' || c >= '0' && c <= '9':
		tok.kind = tokNumber
		var err error
		if i, err = scanNumber(d, i); err != nil {
			return token{}, err
		}
	case c == 't':
		tok.kind, word = tokTrue, "true"
	case c == 'f':
		tok.kind, word = tokFalse, "false"
	case c == 'n':
		tok.kind, word = tokNull, "null"
	default:
		return token{}, scanError(c, "looking for beginning of value")
	}
	if word != "" {
		var err error
		if i, err = scanLiteral(d, i, word); err != nil {
			return token{}, err
		}
	}
	l.pos, tok.end = i, i
	return tok, nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber reads the number at d[i] and returns where it ends.
func scanNumber(d []byte, i int) (int, error) {
	if d[i] == '-' {
		if i++; i >= len(d) {
			return 0, io.ErrUnexpectedEOF
		}
		if !isDigit(d[i]) {
			return 0, scanError(d[i], "in numeric literal")
		}
	}
	if d[i] == '0' {
		i++
	} else {
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && d[i] == '.' {
		if i++; i >= len(d) {
			return 0, io.ErrUnexpectedEOF
		}
		if !isDigit(d[i]) {
			return 0, scanError(d[i], "after decimal point in numeric literal")
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		if i++; i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) {
			return 0, io.ErrUnexpectedEOF
		}
		if !isDigit(d[i]) {
			return 0, scanError(d[i], "in exponent of numeric literal")
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	return i, nil
}

// scanLiteral reads word (true, false or null) at d[i], whose first
// letter is there, and returns where it ends.
func scanLiteral(d []byte, i int, word string) (int, error) {
	for k := 1; k < len(word); k++ {
		if i+k >= len(d) {
			return 0, io.ErrUnexpectedEOF
		}
		if c := d[i+k]; c != word[k] {
			return 0, scanError(c, "in literal "+word+" (expecting "+quoteChar(word[k])+")")
		}
	}
	return i + len(word), nil
}

// key is a key token's name, as encoding/json reads it.
func (l *lexer) key(tok token) []byte {
	return unquote(l.data[tok.start:tok.end], tok.plain)
}
