package strictjson

// Tokens: the lexer, for a reader that builds its own tree of a JSON
// document (quota/config reads a config file in JSON into the tree YAML's
// parser builds, and decodes that as it decodes YAML).

// TokenKind is a Token's kind.
type TokenKind uint8

// The kinds of token.
const (
	String      = TokenKind(tokString)
	Number      = TokenKind(tokNumber)
	True        = TokenKind(tokTrue)
	False       = TokenKind(tokFalse)
	Null        = TokenKind(tokNull)
	BeginArray  = TokenKind(tokBeginArray)
	EndArray    = TokenKind(tokEndArray)
	BeginObject = TokenKind(tokBeginObject)
	EndObject   = TokenKind(tokEndObject)
)

// Token is one token of a document: its kind, where it starts in the
// document, and for a string or a number its bytes (a string's with its
// quotes: Unquote reads it).
type Token struct {
	Kind   TokenKind
	Offset int
	Raw    []byte
	plain  bool
}

// Lexer reads a document's tokens as encoding/json's Decoder.Token does
// with UseNumber — the same tokens, the same errors — without allocating.
type Lexer struct{ l lexer }

// NewLexer returns a lexer of data.
func NewLexer(data []byte) *Lexer { return &Lexer{l: lexer{data: data}} }

// Next returns the next token; io.EOF after the last (which does not say
// the document was whole: its reader knows what it opened).
func (x *Lexer) Next() (Token, error) {
	tok, err := x.l.token()
	if err != nil {
		return Token{}, err
	}
	t := Token{Kind: TokenKind(tok.kind), plain: tok.plain}
	switch tok.kind {
	case tokString, tokNumber:
		t.Offset, t.Raw = tok.start, x.l.data[tok.start:tok.end]
	case tokTrue, tokFalse, tokNull:
		t.Offset = tok.start
	default:
		t.Offset = x.l.pos - 1 // a delimiter, just read
	}
	return t, nil
}

// More says whether an array or object being read has another element.
func (x *Lexer) More() bool { return x.l.more() }

// Unquote is a string token's value, as encoding/json reads it.
func (t Token) Unquote() string { return string(unquote(t.Raw, t.plain)) }
