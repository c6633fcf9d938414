package scale_test

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/afloat/afloat/quota/scale"
)

// The cluster's config file holds every tenant in every region, one line
// a tenant: JSON, or YAML.
func ExampleConfig_WriteQuota() {
	cfg := scale.DefaultConfig("afloat", "etcd", "/tmp/run")
	cfg.Tenants, cfg.Regions, cfg.MaxTxnOps = 2, []string{"eu", "us"}, 1024
	if err := cfg.WriteQuota(os.Stdout); err != nil {
		fmt.Println(err)
	}
	cfg.YAML = true
	if err := cfg.WriteQuota(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"cluster": "scale",
	//  "regions": {"eu": {"token": "eu-token-scale-0123456789"}, "us": {"token": "us-token-scale-0123456789"}},
	//  "etcd": {"max_txn_ops": 1024},
	//  "tenants": [
	//   {"name": "t00000", "rate": 100, "burst": 200, "mode": "hard", "lease_duration": "10s"},
	//   {"name": "t00001", "rate": 100, "burst": 200, "mode": "hard", "lease_duration": "10s"}
	//  ]}
	// # Written by quota/scale: 2 tenants in regions [eu us].
	// cluster: scale
	// regions:
	//   eu: {token: "eu-token-scale-0123456789"}
	//   us: {token: "us-token-scale-0123456789"}
	// tenants:
	//   - {name: t00000, rate: 100, burst: 200, mode: hard, lease_duration: 10s}
	//   - {name: t00001, rate: 100, burst: 200, mode: hard, lease_duration: 10s}
	// etcd: {max_txn_ops: 1024}
}

// A config is checked before anything starts; its errors name the field
// and the range.
func ExampleConfig_Validate() {
	cfg := scale.DefaultConfig("afloat", "etcd", "/tmp/run")
	fmt.Println(cfg.Validate())
	cfg.Tenants = 200_000
	err := cfg.Validate()
	fmt.Println(errors.Is(err, scale.ErrConfig), err)
	// Output:
	// <nil>
	// true scale: invalid config: tenants 200000: want 1 to 100000
}

// A renewal histogram's p99 is read as Prometheus reads it: linearly
// within the bucket the rank falls in.
func ExampleHistogram_Quantile() {
	h := scale.Histogram{
		Bounds: []float64{0.005, 0.01, 0.025, 0.05},
		Counts: []float64{50, 90, 98, 100}, // cumulative
		Count:  100,
	}
	p99 := time.Duration(h.Quantile(0.99) * float64(time.Second))
	fmt.Println(h.Quantile(0.5), p99)
	// Output:
	// 0.005 37.5ms
}
