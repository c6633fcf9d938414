package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// decodeAllowStd is the decoder decodeAllow must agree with.
func decodeAllowStd(b []byte) (AllowRequest, error) {
	var req AllowRequest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(&req)
	if err == nil && dec.More() {
		err = errDataAfter
	}
	return req, err
}

var errDataAfter = errors.New("data after the object")

var allowBodies = []string{
	`{"tenant":"acme","endpoint":"/","n":1}`,
	` { "tenant" : "acme" , "endpoint" : "/search" , "n" : 25 } ` + "\n",
	`{"n":-3,"tenant":"a"}`,
	`{}`,
	`{"tenant":"acme"}`,
	`{"tenant":"ac\u006de"}`,
	`{"Tenant":"acme"}`,
	`{"tenant":"acme","tenant":"beta"}`,
	`{"tenant":"acme","extra":1}`,
	`{"n":1.5}`,
	`{"n":1e3}`,
	`{"n":01}`,
	`{"n":99999999999999999999}`,
	`{"n":null}`,
	`{"tenant":"acme"} {"tenant":"b"}`,
	`{"tenant":"acme"}}`,
	`{"tenant":"acme",}`,
	`{"tenant":"é"}`,
	`[1]`,
	``,
	`{"tenant":"acme"`,
}

func TestDecodeAllowAgreesWithEncodingJSON(t *testing.T) {
	fast := 0
	for _, body := range allowBodies {
		got, err := decodeAllow([]byte(body))
		want, werr := decodeAllowStd([]byte(body))
		if (err == nil) != (werr == nil) || (err == nil && got != want) {
			t.Errorf("%q: decodeAllow = %+v, %v; encoding/json = %+v, %v", body, got, err, want, werr)
		}
		if _, ok := decodeAllowFast([]byte(body)); ok {
			fast++
		}
	}
	// The first five take the fast path; the rest are encoding/json's.
	if fast != 5 {
		t.Errorf("%d bodies took the fast path, want 5", fast)
	}
}

func TestDecodeAllowAllocations(t *testing.T) {
	body := []byte(`{"tenant":"acme","endpoint":"/search","n":1}`)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := decodeAllow(body); err != nil {
			t.Fatal(err)
		}
	})
	// The tenant's and the endpoint's strings; encoding/json's path
	// makes 7 here.
	if allocs > 2 {
		t.Errorf("decodeAllow allocates %v times a call, want at most 2", allocs)
	}
}

func FuzzDecodeAllow(f *testing.F) {
	for _, body := range allowBodies {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, ok := decodeAllowFast(body)
		want, werr := decodeAllowStd(body)
		if ok && (werr != nil || req != want) {
			t.Fatalf("%q: fast path %+v; encoding/json %+v, %v", body, req, want, werr)
		}
	})
}

func BenchmarkDecodeAllow(b *testing.B) {
	body := []byte(`{"tenant":"acme","endpoint":"/search","n":1}`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeAllow(body) //nolint:errcheck
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeAllowStd(body) //nolint:errcheck
		}
	})
}
