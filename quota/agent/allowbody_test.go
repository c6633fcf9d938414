package agent

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/afloat/afloat/quota/config"
)

// FuzzAllowBody: the decision API answers any body with 200 or a refusal
// naming what is wrong, never a panic.
func FuzzAllowBody(f *testing.F) {
	f.Add([]byte(`{"tenant":"acme","endpoint":"/","n":1}`))
	f.Add([]byte(`{"tenant":"acme","n":-3}`))
	f.Add([]byte(`{"tenant":"mallory"}`))
	f.Add([]byte(`{"tenant":"acme"} {}`))
	cfg, err := config.ParseConfig([]byte(good))
	if err != nil {
		f.Fatal(err)
	}
	a, err := New(Options{Config: cfg, Name: "eu", Coordinators: []string{"http://127.0.0.1:1"}, Listen: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	h := a.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "http://127.0.0.1/v1/allow", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 400, 404, 413:
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
}

// TestAllowAnswerEncoding: the decision API's hand-written answer is what
// encoding/json writes.
func TestAllowAnswerEncoding(t *testing.T) {
	for i, ans := range []AllowAnswer{
		{}, {Allowed: true, Remaining: 315.066713}, {Remaining: 0.000001, RetryAfter: 1.197},
		{RetryAfter: 30, RetryKnown: true, Remaining: 999999999999.999999},
		{Never: true, MaxCost: 1200, Remaining: 3.5},
	} {
		var want bytes.Buffer
		json.NewEncoder(&want).Encode(ans)
		if got := appendAllowAnswer(nil, ans); string(got) != want.String() {
			t.Errorf("step %d: %s, want %s", i, got, want.String())
		}
	}
}
