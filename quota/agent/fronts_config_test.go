package agent

import (
	"context"
	"testing"

	"github.com/afloat/afloat/quota/internal/opstest"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// TestEnvoyIndexFirstMatch: the first rule in file order wins, whether
// exact or with a wildcard.
func TestEnvoyIndexFirstMatch(t *testing.T) {
	cfg := opstest.MustConfig(t, good+`envoy:
  domain: edge
  descriptors:
    - {entries: [{key: a, value: "1"}, {key: b}], tenant: acme}
    - {entries: [{key: a, value: "1"}, {key: b, value: "2"}], tenant: acme}
    - {entries: [{key: a, value: "2"}], tenant: acme}
    - {entries: [{key: a}], tenant: acme}
`)
	ix := newEnvoyIndex(&cfg.Envoy)
	for i, tc := range []struct {
		es   []rlsEntry
		want int
	}{
		{[]rlsEntry{{"a", "1"}, {"b", "2"}}, 0},
		{[]rlsEntry{{"a", "1"}, {"b", "9"}}, 0},
		{[]rlsEntry{{"a", "2"}}, 2},
		{[]rlsEntry{{"a", "3"}}, 3},
		{[]rlsEntry{{"b", "1"}}, -1},
		{[]rlsEntry{{"a", "1"}, {"b", "2"}, {"c", "3"}}, -1},
		{[]rlsEntry{{"b", "2"}, {"a", "1"}}, -1},
		// Lengths keep "a"+"12" apart from "a1"+"2".
		{[]rlsEntry{{"a1", "2"}}, -1},
	} {
		if got := ix.match(tc.es); got != tc.want {
			t.Errorf("step %d: match(%v) = %d, want %d", i, tc.es, got, tc.want)
		}
	}
}

// FuzzShouldRateLimit: any request Envoy could send (protobuf bytes) is
// answered with a status per descriptor or refused with InvalidArgument
// or FailedPrecondition, never a panic; a refused request spends nothing.
func FuzzShouldRateLimit(f *testing.F) {
	for _, r := range []*rlsv3.RateLimitRequest{
		{Domain: "edge", HitsAddend: 3},
	} {
		r.Descriptors = append(r.Descriptors, desc("tenant", "acme"), desc("tenant", "acme", "path", "/search"), desc("tenant", "globex", "remote_address", "x"))
		b, _ := proto.Marshal(r)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var req rlsv3.RateLimitRequest
		if proto.Unmarshal(data, &req) != nil {
			return
		}
		clock := &fakeClock{}
		a := fixedAgent(t, fronted, clock)
		lease(t, a.Limiter(), a.now(), "acme", 1, 10, 40)
		resp, err := (&rlsServer{a: a}).ShouldRateLimit(context.Background(), &req)
		if err != nil {
			if c := status.Code(err); c != codes.InvalidArgument && c != codes.FailedPrecondition {
				t.Fatalf("%v", err)
			}
			if bal := a.Limiter().Status(0, "acme").Balance.Float(); bal != 40 {
				t.Fatalf("refused, yet spent: balance %v", bal)
			}
			return
		}
		if len(resp.Statuses) != len(req.Descriptors) {
			t.Fatalf("%d statuses for %d descriptors", len(resp.Statuses), len(req.Descriptors))
		}
	})
}
