package quota_test

import (
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

// TestZeroMarginAndFloor: NoSkewMargin and NoFloor are zero in force, and
// stay so through WithDefaults applied any number of times (a zero field
// would become the default again); other negative values are refused.
func TestZeroMarginAndFloor(t *testing.T) {
	base := quota.Tenant{Name: "a", Rate: 100 * quota.One, Burst: 100 * quota.One, Regions: []string{"eu", "us"}}
	none := base
	none.SkewMargin, none.Floor = quota.NoSkewMargin, quota.NoFloor
	for i, tn := range []quota.Tenant{none, none.WithDefaults(), none.WithDefaults().WithDefaults()} {
		if err := tn.Validate(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if tn.Margin() != 0 || tn.FloorShare() != 0 {
			t.Fatalf("step %d: margin %v, floor %v; want 0 and 0", i, tn.Margin(), tn.FloorShare())
		}
	}
	if d := base.WithDefaults(); d.Margin() != quota.DefaultSkewMargin || d.FloorShare() != quota.DefaultFloor {
		t.Fatalf("zero fields: margin %v, floor %v; want the defaults", d.Margin(), d.FloorShare())
	}
	shares := quota.Allocate(none, map[string]quota.Micro{"eu": 100 * quota.One}, nil)
	if us := shares["us"]; us.Rate != 0 || us.Burst != 0 {
		t.Fatalf("no floor: the idle region keeps %+v", us)
	}
	for i, f := range []func(*quota.Tenant){
		func(t *quota.Tenant) { t.SkewMargin = -2 * time.Millisecond },
		func(t *quota.Tenant) { t.Floor = -0.5 },
	} {
		tn := base
		f(&tn)
		if tn.Validate() == nil {
			t.Errorf("step %d: %+v validated", i, tn)
		}
	}
}
