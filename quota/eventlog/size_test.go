package eventlog

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// countingWriter counts the bytes of the lines written to it.
type countingWriter struct {
	bytes, lines int64
	buf          []byte
}

func (c *countingWriter) Write(e *Event) {
	c.buf = e.AppendJSON(c.buf[:0])
	c.bytes += int64(len(c.buf))
	c.lines++
}

// BenchmarkLogSize measures what a region agent's event log holds for its
// decisions at 10,000 checks a second: a line for each (--event-log-lines)
// or counts over 1 s and 100 ms (--event-log-interval), with the checks
// spread evenly at random over 1 to 10,000 tenants; Unix times, tenants
// named tenant-NNNNN, 5 % refused. Each iteration is a second of
// decisions; GB/day is its bytes × 86,400
// (docs/quota/operations.md, "Event logs in production"):
//
//	go test ./quota/eventlog -run '^$' -bench LogSize -benchtime 20x
func BenchmarkLogSize(b *testing.B) {
	const checks = 10_000 // a second's
	for _, form := range []time.Duration{0, time.Second, 100 * time.Millisecond} {
		for _, tenants := range []int{1, 100, 1000, 10_000} {
			name := fmt.Sprintf("lines/tenants=%d", tenants)
			if form > 0 {
				name = fmt.Sprintf("counts-%v/tenants=%d", form, tenants)
			}
			if form == 0 && tenants > 1 {
				continue // a line a decision, whatever the tenant
			}
			b.Run(name, func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, uint64(tenants)))
				names := make([]string, tenants)
				for i := range names {
					names[i] = fmt.Sprintf("tenant-%05d", i)
				}
				var out countingWriter
				var w Writer = &out
				var counter *Counter
				if form > 0 {
					var err error
					if counter, err = NewCounter(&out, form); err != nil {
						b.Fatal(err)
					}
					w = counter
				}
				t0 := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC).UnixNano()
				at := t0
				b.ResetTimer()
				for range b.N {
					for range checks {
						at += int64(time.Second) / checks
						e := Event{T: at, Kind: Admit, Tenant: names[r.IntN(tenants)], Region: "eu", N: 1}
						if r.IntN(20) == 0 {
							e.Kind = Reject
						}
						w.Write(&e)
					}
					if counter != nil {
						counter.Flush(at)
					}
				}
				seconds := float64(at-t0) / 1e9
				b.ReportMetric(float64(out.bytes)/seconds*86400/1e9, "GB/day")
				b.ReportMetric(float64(out.bytes)/float64(out.lines), "B/line")
				b.ReportMetric(float64(out.lines)/seconds, "lines/s")
			})
		}
	}
}
