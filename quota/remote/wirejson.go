package remote

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/afloat/afloat/internal/strictjson"
	"github.com/afloat/afloat/quota"
)

// The renewal wire's answers without reflection. At 100,000 tenants in
// three regions renewing every 5 s, 60,000 grants a second cross the wire,
// and encoding/json spent several times as long as this code on each one
// it wrote or read (docs/benchmarks.md, "The renewal wire"). The bytes
// written are encoding/json's to the byte (TestWireWritesAsEncodingJSON),
// so that either end may be the other's older version; an answer of the
// shape appendAnswer writes is read here, and anything else by
// json.Unmarshal itself, so that the client reads whatever it read before
// (FuzzDecodeAnswer). The renewal body is read likewise
// (decodeRenewBody), strictly, as internal/strictjson reads it; bodies
// are written by encoding/json, which writes them fast enough, and the
// other bodies read by internal/strictjson.

// answerBufs keeps the buffers answers are written into: one of 2,048
// grants is about 700 KB.
var answerBufs = sync.Pool{New: func() any { return new([]byte) }}

// writeAnswer writes ans as writeJSON does, byte for byte.
func writeAnswer(w http.ResponseWriter, ans Answer) {
	buf := answerBufs.Get().(*[]byte)
	*buf = appendAnswer((*buf)[:0], ans)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(*buf) //nolint:errcheck // the client went away
	answerBufs.Put(buf)
}

// appendAnswer appends ans as a json.Encoder writes it, with its newline.
func appendAnswer(out []byte, ans Answer) []byte {
	out = append(out, `{"epoch":`...)
	out = strconv.AppendUint(out, ans.Epoch, 10)
	out = append(out, `,"results":`...)
	if ans.Results == nil {
		out = append(out, "null"...)
	} else {
		out = append(out, '[')
		for i := range ans.Results {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendResult(out, &ans.Results[i])
		}
		out = append(out, ']')
	}
	if len(ans.Nudges) > 0 {
		out = append(out, `,"nudges":[`...)
		for i, n := range ans.Nudges {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, `{"tenant":`...)
			out = appendString(out, n.Tenant)
			out = append(out, `,"region":`...)
			out = appendString(out, n.Region)
			out = append(out, `,"epoch":`...)
			out = strconv.AppendUint(out, n.Epoch, 10)
			out = append(out, '}')
		}
		out = append(out, ']')
	}
	return append(out, "}\n"...)
}

func appendResult(out []byte, r *Result) []byte {
	out = append(out, '{')
	sep := ""
	if r.Grant != nil {
		out = append(out, `"grant":`...)
		out = appendGrant(out, r.Grant)
		sep = ","
	}
	if r.Error != "" {
		out = append(out, sep+`"error":`...)
		out = appendString(out, r.Error)
		sep = ","
	}
	if r.Code != "" {
		out = append(out, sep+`"code":`...)
		out = appendString(out, r.Code)
		sep = ","
	}
	if r.PatienceMS != 0 {
		out = append(out, sep+`"patience_ms":`...)
		out = strconv.AppendInt(out, r.PatienceMS, 10)
	}
	return append(out, '}')
}

func appendGrant(out []byte, g *quota.Grant) []byte {
	l := &g.Lease
	out = append(out, `{"lease":{"id":`...)
	out = strconv.AppendUint(out, l.ID, 10)
	out = append(out, `,"tenant":`...)
	out = appendString(out, l.Tenant)
	out = append(out, `,"region":`...)
	out = appendString(out, l.Region)
	out = append(out, `,"epoch":`...)
	out = strconv.AppendUint(out, l.Epoch, 10)
	out = append(out, `,"rate":`...)
	out = strconv.AppendInt(out, int64(l.Rate), 10)
	out = append(out, `,"burst":`...)
	out = strconv.AppendInt(out, int64(l.Burst), 10)
	out = append(out, `,"activates_ns":`...)
	out = strconv.AppendInt(out, int64(l.Activates), 10)
	out = append(out, `,"expires_ns":`...)
	out = strconv.AppendInt(out, int64(l.Expires), 10)
	out = append(out, `,"transfer":`...)
	out = strconv.AppendInt(out, int64(l.Transfer), 10)
	out = append(out, `},"seq":`...)
	out = strconv.AppendUint(out, g.Seq, 10)
	out = append(out, `,"valid_for_ns":`...)
	out = strconv.AppendInt(out, int64(g.ValidFor), 10)
	out = append(out, `,"margin_ns":`...)
	out = strconv.AppendInt(out, int64(g.Margin), 10)
	out = append(out, `,"mode":`...)
	out = strconv.AppendInt(out, int64(g.Mode), 10)
	out = append(out, `,"emergency":`...)
	out = strconv.AppendInt(out, int64(g.Emergency), 10)
	if g.Ceiling != 0 {
		out = append(out, `,"ceiling":`...)
		out = strconv.AppendInt(out, int64(g.Ceiling), 10)
	}
	if g.Unchanged {
		out = append(out, `,"unchanged":true`...)
	}
	if g.Short {
		out = append(out, `,"short":true`...)
	}
	return append(out, '}')
}

// appendString appends s as encoding/json writes a string: as it is
// when it is printable ASCII that needs no escape (names, regions, codes),
// else by encoding/json itself (errors quote names, so an error's string
// takes this path: errors are few).
func appendString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(out, q...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}

// decodeAnswer is json.Unmarshal into a zero Answer; want is how many
// results the caller expects, to size them.
func decodeAnswer(raw []byte, want int) (Answer, error) {
	r := answerReader{b: raw, ok: true}
	if ans := r.answer(want); r.ok {
		return ans, nil
	}
	var ans Answer
	err := json.Unmarshal(raw, &ans)
	return ans, err
}

// An answerReader reads an answer of the shape appendAnswer writes (its
// keys in its order, nothing between tokens), as json.Unmarshal would:
// ok turns false at anything else, and json.Unmarshal reads the body
// instead, to the same effect or the same error.
type answerReader struct {
	b      []byte
	i      int
	ok     bool
	region string // the last region read: every grant of an answer names the same
}

func (r *answerReader) answer(want int) Answer {
	var ans Answer
	r.expect(`{"epoch":`)
	ans.Epoch = r.uint()
	r.expect(`,"results":`)
	if !r.skip("null") {
		r.expect("[")
		ans.Results = make([]Result, 0, min(max(want, 0), MaxBatch))
		if !r.skip("]") {
			var grants []quota.Grant // the answer's grants, allocated together
			for r.ok {
				var res Result
				r.expect("{")
				first := true // member of the result
				if r.skip(`"grant":`) {
					if len(grants) == cap(grants) {
						grants = make([]quota.Grant, 0, max(16, cap(ans.Results)-len(ans.Results)))
					}
					grants = append(grants, r.grant())
					res.Grant, first = &grants[len(grants)-1], false
				}
				if first && r.skip(`"error":`) || !first && r.skip(`,"error":`) {
					res.Error, first = r.string(), false
				}
				if first && r.skip(`"code":`) || !first && r.skip(`,"code":`) {
					res.Code, first = r.string(), false
				}
				if first && r.skip(`"patience_ms":`) || !first && r.skip(`,"patience_ms":`) {
					res.PatienceMS = r.int(64)
				}
				r.expect("}")
				ans.Results = append(ans.Results, res)
				if !r.skip(",") {
					break
				}
			}
			r.expect("]")
		}
	}
	if r.skip(`,"nudges":[`) {
		ans.Nudges = []quota.Nudge{}
		for r.ok && !r.skip("]") {
			if len(ans.Nudges) > 0 {
				r.expect(",")
			}
			var n quota.Nudge
			r.expect(`{"tenant":`)
			n.Tenant = r.string()
			r.expect(`,"region":`)
			n.Region = r.regionString()
			r.expect(`,"epoch":`)
			n.Epoch = r.uint()
			r.expect("}")
			ans.Nudges = append(ans.Nudges, n)
		}
	}
	r.expect("}")
	r.end()
	return ans
}

func (r *answerReader) grant() quota.Grant {
	var g quota.Grant
	l := &g.Lease
	r.expect(`{"lease":{"id":`)
	l.ID = r.uint()
	r.expect(`,"tenant":`)
	l.Tenant = r.string()
	r.expect(`,"region":`)
	l.Region = r.regionString()
	r.expect(`,"epoch":`)
	l.Epoch = r.uint()
	r.expect(`,"rate":`)
	l.Rate = quota.Micro(r.int(64))
	r.expect(`,"burst":`)
	l.Burst = quota.Micro(r.int(64))
	r.expect(`,"activates_ns":`)
	l.Activates = time.Duration(r.int(64))
	r.expect(`,"expires_ns":`)
	l.Expires = time.Duration(r.int(64))
	r.expect(`,"transfer":`)
	l.Transfer = quota.Micro(r.int(64))
	r.expect(`},"seq":`)
	g.Seq = r.uint()
	r.expect(`,"valid_for_ns":`)
	g.ValidFor = time.Duration(r.int(64))
	r.expect(`,"margin_ns":`)
	g.Margin = time.Duration(r.int(64))
	r.expect(`,"mode":`)
	g.Mode = quota.Mode(r.int(strconv.IntSize))
	r.expect(`,"emergency":`)
	g.Emergency = quota.Micro(r.int(64))
	if r.skip(`,"ceiling":`) {
		g.Ceiling = quota.Micro(r.int(64))
	}
	if r.skip(`,"unchanged":`) {
		g.Unchanged = r.bool()
	}
	if r.skip(`,"short":`) {
		g.Short = r.bool()
	}
	r.expect("}")
	return g
}

// end reads the white space after the value, which must end the body.
func (r *answerReader) end() {
	for r.i < len(r.b) && (r.b[r.i] == ' ' || r.b[r.i] == '\t' || r.b[r.i] == '\r' || r.b[r.i] == '\n') {
		r.i++
	}
	if r.i != len(r.b) {
		r.ok = false
	}
}

// skip reads s if it comes next.
func (r *answerReader) skip(s string) bool {
	if r.ok && len(r.b)-r.i >= len(s) && string(r.b[r.i:r.i+len(s)]) == s {
		r.i += len(s)
		return true
	}
	return false
}

// expect reads s, which must come next.
func (r *answerReader) expect(s string) {
	if !r.skip(s) {
		r.ok = false
	}
}

// digits reads the digits of an integer as JSON writes them (no leading
// zero) into a magnitude of at most limit; a fraction or an exponent
// after them is not for an integer field.
func (r *answerReader) digits(limit uint64) uint64 {
	start := r.i
	var v uint64
	for ; r.ok && r.i < len(r.b) && '0' <= r.b[r.i] && r.b[r.i] <= '9'; r.i++ {
		d := uint64(r.b[r.i] - '0')
		if v > (limit-d)/10 {
			r.ok = false
		}
		v = v*10 + d
	}
	n := r.i - start
	if n == 0 || n > 1 && r.b[start] == '0' {
		r.ok = false
	}
	if r.i < len(r.b) && (r.b[r.i] == '.' || r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.ok = false
	}
	return v
}

func (r *answerReader) uint() uint64 { return r.digits(math.MaxUint64) }

// int reads an integer of a signed type of the given bits.
func (r *answerReader) int(bits int) int64 {
	if r.skip("-") {
		return -int64(r.digits(1 << (bits - 1)))
	}
	return int64(r.digits(1<<(bits-1) - 1))
}

func (r *answerReader) bool() bool {
	if r.skip("true") {
		return true
	}
	r.expect("false")
	return false
}

// regionString reads a string, sharing the last region read when it is
// the same: every grant of an answer names one region.
func (r *answerReader) regionString() string {
	start := r.i
	if r.region != "" && r.skip(`"`) && r.skip(r.region) && r.skip(`"`) {
		return r.region
	}
	r.i = start
	s, plain := r.stringPlain()
	if plain { // its bytes are its value: the test above is sound for it
		r.region = s
	}
	return s
}

// string reads a string: as it is when it is printable ASCII with no
// escape, else by json.Unmarshal, which resolves escapes and replaces bad
// UTF-8 as it does within a body.
func (r *answerReader) string() string {
	s, _ := r.stringPlain()
	return s
}

// stringPlain is string, and says whether the string was read as it is.
func (r *answerReader) stringPlain() (s string, plain bool) {
	if !r.ok || r.i >= len(r.b) || r.b[r.i] != '"' {
		r.ok = false
		return "", false
	}
	plain = true
	for j := r.i + 1; j < len(r.b); j++ {
		switch c := r.b[j]; {
		case c == '"':
			raw := r.b[r.i : j+1]
			r.i = j + 1
			if plain {
				return string(raw[1 : len(raw)-1]), true
			}
			var u string // its own variable: one json.Unmarshal takes escapes to the heap
			if json.Unmarshal(raw, &u) != nil {
				r.ok = false
			}
			return u, false
		case c == '\\':
			plain = false
			j++ // the escaped byte cannot end the string
		case c < 0x20:
			r.ok = false
			return "", false
		case c >= utf8.RuneSelf:
			plain = false
		}
	}
	r.ok = false
	return "", false
}

// decodeRenewBody reads a renewal body as strictjson.Decode does — the
// same body, or the same refusal (FuzzDecodeRenewBody). A body of the
// shape appendRenewBody writes (its keys in its order, nothing between
// tokens, names of printable ASCII without escapes) is read here without
// reflection; anything else by strictjson.Decode itself. At 100,000
// tenants the coordinator reads 60,000 renewals a second, and
// encoding/json's reflection under strictjson was a sixth of the
// leader's work (docs/benchmarks.md, "The renewal wire").
func decodeRenewBody(raw []byte, v *RenewBody) error {
	r := answerReader{b: raw, ok: true}
	if body := r.renewBody(); r.ok {
		*v = body
		return nil
	}
	return strictjson.Decode(raw, v)
}

func (r *answerReader) renewBody() RenewBody {
	var b RenewBody
	r.expect(`{"incarnation":`)
	b.Incarnation = r.uint()
	r.expect(`,"requests":[`)
	// A request takes about 110 bytes: room for all of them at once.
	b.Requests = make([]quota.Request, 0, min(len(r.b)/100+1, MaxBatch))
	for r.ok && !r.skip("]") {
		if len(b.Requests) > 0 {
			r.expect(",")
		}
		var q quota.Request
		r.expect(`{"tenant":`)
		q.Tenant = r.plainString()
		r.expect(`,"region":`)
		q.Region = r.plainRegion()
		r.expect(`,"seq":`)
		q.Seq = r.uint()
		r.expect(`,"holding":`)
		q.Holding = r.uint()
		if r.skip(`,"resumed":true`) {
			q.Resumed = true
		}
		r.expect(`,"epoch":`)
		q.Epoch = r.uint()
		if r.skip(`,"incarnation":`) {
			q.Incarnation = r.uint()
		}
		r.expect(`,"demand":`)
		q.Demand = quota.Micro(r.int(64))
		r.expect(`,"balance":`)
		q.Balance = quota.Micro(r.int(64))
		r.expect("}")
		b.Requests = append(b.Requests, q)
	}
	if r.skip(`,"patience_ms":`) {
		b.PatienceMS = r.int(64)
	}
	r.expect("}")
	r.end()
	return b
}

// plainString reads a string of printable ASCII without escapes; any
// other string is for strictjson to read.
func (r *answerReader) plainString() string {
	s, plain := r.stringPlain()
	if !plain {
		r.ok = false
	}
	return s
}

// plainRegion is plainString, sharing the last region read: every
// request of a body names one region.
func (r *answerReader) plainRegion() string {
	start := r.i
	if r.region != "" && r.skip(`"`) && r.skip(r.region) && r.skip(`"`) {
		return r.region
	}
	r.i = start
	s := r.plainString()
	if r.ok {
		r.region = s
	}
	return s
}
