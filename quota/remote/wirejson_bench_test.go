package remote

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/afloat/afloat/internal/strictjson"
	"github.com/afloat/afloat/quota"
)

// benchBatch is a full body: what a region of 100,000 tenants sends.
const benchBatch = MaxBatch

// benchBody is a body of n renewals as a region agent sends it.
func benchBody(n int) RenewBody {
	b := RenewBody{Incarnation: 8_123_456_789_012, PatienceMS: 2500, Requests: make([]quota.Request, n)}
	for i := range b.Requests {
		b.Requests[i] = quota.Request{Tenant: fmt.Sprintf("tenant-%05d", i), Region: "eu-west",
			Seq: uint64(1_000_000 + i), Holding: uint64(4_000_000 + i), Epoch: 7,
			Demand: quota.Micro(i) * 37_000, Balance: quota.Micro(i)*11_000 - 5_000_000}
	}
	return b
}

// benchAnswer is the coordinator's answer to benchBody(n): a grant each,
// a few of them unchanged or short, and a few nudges.
func benchAnswer(n int) Answer {
	a := Answer{Epoch: 7, Results: make([]Result, n)}
	for i := range a.Results {
		g := quota.Grant{Lease: quota.Lease{ID: uint64(4_000_000 + n + i), Tenant: fmt.Sprintf("tenant-%05d", i), Region: "eu-west",
			Epoch: 7, Rate: quota.Micro(i+1) * 33_333, Burst: quota.Micro(i+1) * 66_666,
			Activates: 1_234_567_890_123 + time.Duration(i), Expires: 1_244_567_890_123 + time.Duration(i), Transfer: quota.Micro(i) * 7},
			Seq: uint64(1_000_000 + i), ValidFor: 10 * time.Second, Margin: 250 * time.Millisecond, Mode: quota.Hard,
			Emergency: 1_000_000, Ceiling: quota.Micro(i+1) * 99_999, Unchanged: i%3 == 0, Short: i%17 == 0}
		a.Results[i] = Result{Grant: &g}
	}
	for i := range 8 {
		a.Nudges = append(a.Nudges, quota.Nudge{Tenant: fmt.Sprintf("tenant-%05d", i*7), Region: "eu-west", Epoch: 7})
	}
	return a
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkRenewBody: a body of 2,048 renewals written by the client
// (encode: json.Marshal) and read by the coordinator, strictly (decode: decodeRenewBody; decode-strict:
// internal/strictjson, which it falls back to); peer: encoding/json's
// lenient Unmarshal, which checks nothing strictjson checks. ns/request
// is one renewal's share.
func BenchmarkRenewBody(b *testing.B) {
	body := benchBody(benchBatch)
	data, err := json.Marshal(body)
	if err != nil {
		b.Fatal(err)
	}
	run(b, "encode", len(data), func() { json.Marshal(body) }) //nolint:errcheck
	run(b, "decode", len(data), func() {
		var v RenewBody
		if err := decodeRenewBody(data, &v); err != nil {
			b.Fatal(err)
		}
	})
	run(b, "decode-strict", len(data), func() {
		var v RenewBody
		if err := strictjson.Decode(data, &v); err != nil {
			b.Fatal(err)
		}
	})
	run(b, "decode-peer-encoding-json", len(data), func() {
		var v RenewBody
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkAnswer: the answer of 2,048 grants to such a body, written by
// the coordinator (encode: writeAnswer) and read by the client (decode:
// decodeAnswer); peers: encoding/json's Encoder (writeJSON) and
// Unmarshal. ns/request is one grant's share.
func BenchmarkAnswer(b *testing.B) {
	ans := benchAnswer(benchBatch)
	w := &discard{h: http.Header{}}
	raw, err := json.Marshal(ans)
	if err != nil {
		b.Fatal(err)
	}
	raw = append(raw, '\n')
	run(b, "encode", len(raw), func() { writeAnswer(w, ans) })
	run(b, "encode-peer-encoding-json", len(raw), func() { writeJSON(w, ans) })
	run(b, "decode", len(raw), func() {
		if _, err := decodeAnswer(raw, benchBatch); err != nil {
			b.Fatal(err)
		}
	})
	run(b, "decode-peer-encoding-json", len(raw), func() {
		var a Answer
		if err := json.Unmarshal(raw, &a); err != nil {
			b.Fatal(err)
		}
	})
}

// run runs f, one body of benchBatch requests of size bytes, as the
// sub-benchmark name; it reports the wall time and the process's CPU time
// (the collector's included) a request.
func run(b *testing.B, name string, size int, f func()) {
	b.Run(name, func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		start := cpuTime()
		for b.Loop() {
			f()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchBatch, "ns/request")
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/benchBatch, "cpu-ns/request")
	})
}
