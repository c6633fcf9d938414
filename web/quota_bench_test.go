package web

import (
	"strconv"
	"testing"

	"github.com/afloat/afloat/quota/chaos"
)

// The quota lab's cost (docs/benchmarks.md, "Console: the quota lab"):
// its opening run through the handler — decode, the harness with samples
// and the timeline, frames, JSON — against the floor, the harness alone on
// the same run, and the largest run the lab takes.

func BenchmarkQuotaRun(b *testing.B) {
	h := Handler(DefaultConfig())
	for b.Loop() {
		if code, _, raw := postQuota(b, h, quotaLabBody); code != 200 {
			b.Fatalf("%d %s", code, raw)
		}
	}
}

// BenchmarkQuotaRunFloor is quotaLabBody's run, the harness alone: no
// samples, no timeline, no frames, no JSON.
func BenchmarkQuotaRunFloor(b *testing.B) {
	req, aerr := decodeQuota([]byte(quotaLabBody))
	if aerr != nil {
		b.Fatal(aerr.msg)
	}
	cfg, aerr := req.chaosConfig()
	if aerr != nil {
		b.Fatal(aerr.msg)
	}
	cfg.Sample = 0
	for b.Loop() {
		if _, err := chaos.Run(cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// quotaLargest is the costliest run the lab takes: R at its top, all the
// traffic it allows, ten minutes, the shortest lease, best effort, and 50
// actions.
func quotaLargest() string {
	acts := ""
	for i := range quotaMaxActions {
		if i > 0 {
			acts += ","
		}
		switch i % 3 {
		case 0:
			acts += `{"at_s": ` + strconv.Itoa(5+11*i) + `, "action": "shift", "traffic": {"eu": 100, "us": 100, "ap": 100}}`
		case 1:
			acts += `{"at_s": ` + strconv.Itoa(5+11*i) + `, "action": "partition", "region": "eu"}`
		default:
			acts += `{"at_s": ` + strconv.Itoa(5+11*i) + `, "action": "heal", "region": "eu"}`
		}
	}
	return `{"seed": 3, "rate": 1000, "burst": 100000, "mode": "best-effort", "emergency": 1000, "lease_s": 2, "minutes": 10,
		"traffic": {"eu": 100, "us": 100, "ap": 100}, "actions": [` + acts + `]}`
}

func BenchmarkQuotaRunLargest(b *testing.B) {
	h := Handler(DefaultConfig())
	body := quotaLargest()
	for b.Loop() {
		if code, _, raw := postQuota(b, h, body); code != 200 {
			b.Fatalf("%d %s", code, raw)
		}
	}
}
