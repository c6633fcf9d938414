package remote

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/afloat/afloat/internal/strictjson"
	"github.com/afloat/afloat/quota"
)

// fill sets everything v holds to random values of the sorts JSON
// carries differently: strings plain and to be escaped, integers zero
// (which omitempty leaves out) and at their limits, pointers and slices
// nil, empty and not. It fills every exported field by reflection, so
// that a field added to a type of the wire shows in the comparisons
// below, and it refuses a kind the hand-written code does not write.
func fill(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(randString(r))
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := v.Type().Bits()
		lo, hi := int64(-1)<<(bits-1), int64(uint64(1)<<(bits-1)-1)
		v.SetInt([]int64{0, 0, 1, -1, lo, hi, r.Int64N(1_000_000_000_000), -r.Int64N(1 << 20), int64(r.Uint64()) >> (64 - bits)}[r.IntN(9)])
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		bits := v.Type().Bits()
		v.SetUint([]uint64{0, 0, 1, math.MaxUint64 >> (64 - bits), r.Uint64N(1 << 40), r.Uint64() >> (64 - bits)}[r.IntN(6)])
	case reflect.Pointer:
		if r.IntN(4) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(r, p.Elem())
		v.Set(p)
	case reflect.Slice:
		switch r.IntN(5) {
		case 0:
			v.SetZero()
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			n := 1 + r.IntN(6)
			s := reflect.MakeSlice(v.Type(), n, n)
			for i := range n {
				fill(r, s.Index(i))
			}
			v.Set(s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(r, v.Field(i))
			}
		}
	default:
		panic("fill: the wire's hand-written JSON writes no " + v.Type().String())
	}
}

func randString(r *rand.Rand) string {
	pieces := []string{"", "acme", "eu-west", "tenant-00042", `quota: tenant "acme": unknown`, `back\slash`,
		"<script>&amp;", "\n\t\r\b\f\x00\x1f\x7f", "\u2028\u2029", "é日本😀", "\xff\xfe", "\xe2\x82", " "}
	s := ""
	for range r.IntN(4) {
		if r.IntN(6) == 0 {
			b := make([]byte, r.IntN(6))
			for i := range b {
				b[i] = byte(r.UintN(256))
			}
			s += string(b)
			continue
		}
		s += pieces[r.IntN(len(pieces))]
	}
	return s
}

// TestWireWritesAsEncodingJSON: over many random values, an answer is
// written as writeJSON writes it, headers and all, and read back as
// json.Unmarshal reads it by the reader's own path (not by falling back
// to json.Unmarshal).
func TestWireWritesAsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		var ans Answer
		fill(r, reflect.ValueOf(&ans).Elem())
		got, wantRec := httptest.NewRecorder(), httptest.NewRecorder()
		writeAnswer(got, ans)
		writeJSON(wantRec, ans)
		if !bytes.Equal(got.Body.Bytes(), wantRec.Body.Bytes()) || !reflect.DeepEqual(got.Header(), wantRec.Header()) {
			t.Fatalf("step %d: writeAnswer(%+v) =\n%v %s\nwant\n%v %s", i, ans, got.Header(), got.Body, wantRec.Header(), wantRec.Body)
		}

		raw := got.Body.Bytes()
		var ref Answer
		if err := json.Unmarshal(raw, &ref); err != nil {
			t.Fatal(err)
		}
		rd := answerReader{b: raw, ok: true}
		if read := rd.answer(len(ans.Results)); !rd.ok || !reflect.DeepEqual(read, ref) {
			t.Fatalf("step %d: the reader's own path on\n%s\n= %+v (ok %v), want %+v", i, raw, read, rd.ok, ref)
		}
	}
}

// FuzzDecodeAnswer: decodeAnswer reads any body as json.Unmarshal into a
// zero Answer does: the same answer, or the same error.
func FuzzDecodeAnswer(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		var ans Answer
		fill(r, reflect.ValueOf(&ans).Elem())
		f.Add(appendAnswer(nil, ans))
	}
	for _, s := range []string{
		`{"epoch":1,"results":[{}]}`, `{"epoch":1,"results":null}`, `{"epoch":1,"results":[]}`,
		`{"epoch":1,"results":[{"code":"busy"}],"nudges":[]}`, `{"epoch":1,"results":[{"error":"e","code":"busy","patience_ms":1334}]}`,
		`{"epoch":1,"results":[{"patience_ms":-5}]}`, `{"epoch":1,"results":[{"code":"busy","patience_ms":1.5}]}`, ` {"epoch":1,"results":[]}`, `{"results":[],"epoch":1}`,
		`{"epoch":1,"results":[{"grant":null}]}`, `{"Epoch":1,"results":[]}`, `{"epoch":1.0,"results":[]}`, `{"epoch":-1,"results":[]}`,
		`{"epoch":18446744073709551616,"results":[]}`, `{"epoch":01,"results":[]}`, `{"epoch":1,"results":[],"x":1}`,
		`{"epoch":1,"results":[{"error":"a\u00e9\"b","code":"x"}]}`, `{"epoch":1,"results":[{"error":"` + "\xff" + `"}]}`,
		`{"epoch":1,"results":[{"grant":{"lease":{"id":1,"tenant":"a","region":"eu","epoch":1,"rate":-9223372036854775808,"burst":9223372036854775807,"activates_ns":0,"expires_ns":0,"transfer":0},"seq":1,"valid_for_ns":1,"margin_ns":1,"mode":2147483648,"emergency":0,"unchanged":false}}]}`,
		`{"epoch":1,"results":[{"grant":{"lease":{"id":1,"tenant":"a","region":"eu","epoch":1,"rate":9223372036854775808,"burst":0,"activates_ns":0,"expires_ns":0,"transfer":0},"seq":1,"valid_for_ns":1,"margin_ns":1,"mode":0,"emergency":0}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := decodeAnswer(raw, 4)
		var want Answer
		wantErr := json.Unmarshal(raw, &want)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("decodeAnswer(%q): %v; json.Unmarshal: %v", raw, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeAnswer(%q) = %+v; json.Unmarshal: %+v", raw, got, want)
		}
	})
}

// TestRenewBodyReadAsStrictJSON: over many random bodies as the client
// writes them (json.Marshal), decodeRenewBody reads what
// strictjson.Decode reads — by the reader's own path whenever every name
// in the body is plain, which the bodies of plain names here all are.
func TestRenewBodyReadAsStrictJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	own, plain := 0, 0
	for i := range 3000 {
		var body RenewBody
		fill(r, reflect.ValueOf(&body).Elem())
		if i%2 == 0 {
			plain++
			body.Requests = append(body.Requests, quota.Request{})
			for k := range body.Requests {
				body.Requests[k].Tenant = fmt.Sprintf("t%05d", r.IntN(100_000))
				body.Requests[k].Region = "eu"
			}
		}
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		var ref RenewBody
		refErr := strictjson.Decode(raw, &ref)
		rd := answerReader{b: raw, ok: true}
		read := rd.renewBody()
		if rd.ok {
			own++
			if refErr != nil || !reflect.DeepEqual(read, ref) {
				t.Fatalf("step %d: the reader's own path on\n%s\n= %+v, want %+v (%v)", i, raw, read, ref, refErr)
			}
		} else if i%2 == 0 {
			t.Fatalf("step %d: a body of plain names read by strictjson, not by the reader:\n%s", i, raw)
		}
		var dec RenewBody
		if err := decodeRenewBody(raw, &dec); fmt.Sprint(err) != fmt.Sprint(refErr) || err == nil && !reflect.DeepEqual(dec, ref) {
			t.Fatalf("step %d: decodeRenewBody(%s) = %+v, %v; strictjson: %+v, %v", i, raw, dec, err, ref, refErr)
		}
	}
	if own < plain {
		t.Fatalf("the reader's own path read %d bodies: want at least the %d of plain names", own, plain)
	}
}

// FuzzDecodeRenewBody: decodeRenewBody reads any body as strictjson.Decode
// into a zero RenewBody does: the same body, or the same refusal.
func FuzzDecodeRenewBody(f *testing.F) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 8 {
		var body RenewBody
		fill(r, reflect.ValueOf(&body).Elem())
		raw, err := json.Marshal(body)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	for _, s := range []string{
		`{"incarnation":1,"requests":[]}`, `{"incarnation":1,"requests":null}`, `{"incarnation":1,"requests":[],"patience_ms":0}`,
		`{"incarnation":1,"requests":[{"tenant":"a","region":"eu","seq":1,"holding":0,"epoch":2,"demand":-1,"balance":0}],"patience_ms":900}`,
		`{"incarnation":1,"requests":[{"tenant":"a","region":"eu","seq":1,"holding":0,"epoch":2,"incarnation":1,"demand":0,"balance":0},{"tenant":"b","region":"eu","seq":2,"holding":0,"epoch":2,"demand":0,"balance":0}]}`,
		`{"incarnation":1,"requests":[{"tenant":"a","region":"eu","seq":1,"holding":0,"epoch":2,"demand":-0,"balance":0}]}`,
		`{"incarnation":1,"requests":[{"tenant":"a","region":"eu","seq":-1,"holding":0,"epoch":2,"demand":0,"balance":0}]}`,
		`{"incarnation":1,"requests":[{"tenant":"a","region":"eu","seq":1,"holding":0,"epoch":2,"demand":1.0,"balance":0}]}`,
		`{"incarnation":1,"requests":[{"tenant":"a","region":"eu","seq":1,"holding":0,"epoch":2,"demand":0,"balance":9223372036854775808}]}`,
		`{"incarnation":1,"requests":[{"tenant":"a","region":"eu","seq":1,"seq":1,"holding":0,"epoch":2,"demand":0,"balance":0}]}`,
		`{"incarnation":1,"requests":[{"tenant":"a\u00e9","region":"eu","seq":1,"holding":0,"epoch":2,"demand":0,"balance":0}]}`,
		`{"incarnation":1,"requests":[{"tenant":"` + "\xff" + `","region":"eu","seq":1,"holding":0,"epoch":2,"demand":0,"balance":0}]}`,
		`{"incarnation":18446744073709551616,"requests":[]}`, `{"incarnation":01,"requests":[]}`, `{"requests":[],"incarnation":1}`,
		`{"incarnation":1,"requests":[]} `, `{"incarnation":1,"requests":[]}x`, `{"incarnation":1,"requests":[],"x":1}`, `{"Incarnation":1,"requests":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var got, want RenewBody
		err := decodeRenewBody(raw, &got)
		wantErr := strictjson.Decode(raw, &want)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("decodeRenewBody(%q): %v; strictjson: %v", raw, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeRenewBody(%q) = %+v; strictjson: %+v", raw, got, want)
		}
	})
}
