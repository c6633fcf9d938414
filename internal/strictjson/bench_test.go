package strictjson

import (
	"encoding/json"
	"fmt"
	"testing"
)

// renewal is quota/remote's RenewBody, as its kinds go.
type renewal struct {
	Incarnation uint64           `json:"incarnation"`
	Requests    []renewalRequest `json:"requests"`
	PatienceMS  int64            `json:"patience_ms,omitempty"`
}

// renewalRequest is quota.Request, as its kinds go.
type renewalRequest struct {
	Tenant      string `json:"tenant"`
	Region      string `json:"region"`
	Seq         uint64 `json:"seq"`
	Holding     uint64 `json:"holding"`
	Epoch       uint64 `json:"epoch"`
	Incarnation uint64 `json:"incarnation,omitempty"`
	Demand      int64  `json:"demand"`
	Balance     int64  `json:"balance"`
}

// renewals is a body of n renewals as a region agent sends them, in
// quota/remote's RenewBody's shape.
func renewals(n int) []byte {
	var v renewal
	v.Incarnation, v.PatienceMS = 8_123_456_789_012, 2500
	v.Requests = make([]renewalRequest, n)
	for i := range v.Requests {
		r := &v.Requests[i]
		r.Tenant, r.Region = fmt.Sprintf("tenant-%05d", i), "eu-west"
		r.Seq, r.Holding, r.Epoch = uint64(1_000_000+i), uint64(4_000_000+i), 7
		r.Demand, r.Balance = int64(i)*37_000, int64(i)*11_000-5_000_000
	}
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// BenchmarkDecode: a body of 2,048 renewals, strictly (Decode) and, as
// the peer, by encoding/json alone (json.Unmarshal, which Decode calls
// after its check); ns/request is a renewal's share, cpu-ns/request the
// process's CPU time for it (the collector's included).
func BenchmarkDecode(b *testing.B) {
	const n = 2048
	data := renewals(n)
	for _, c := range []struct {
		name   string
		decode func([]byte, any) error
	}{
		{"strictjson", Decode},
		{"encoding-json", json.Unmarshal},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				var v renewal
				if err := c.decode(data, &v); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/request")
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/n, "cpu-ns/request")
		})
	}
}
