package region_test

import (
	"fmt"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/region"
)

// A region asks for a lease, installs the grant and spends it, all on
// explicit time (nanoseconds of the region's clock).
func ExampleLimiter() {
	lim, err := region.New(region.DefaultConfig("eu", "acme"))
	if err != nil {
		panic(err)
	}
	req, _ := lim.Request(0, "acme")
	grant := quota.Grant{ // what the coordinator would answer
		Lease:    quota.Lease{ID: 1, Tenant: "acme", Region: "eu", Epoch: 1, Rate: 100 * quota.One, Burst: 50 * quota.One},
		Seq:      req.Seq,
		ValidFor: 10 * time.Second, Margin: 500 * time.Millisecond,
	}
	in := lim.Install(0, grant)
	fmt.Println("installed:", in.OK(), "until", time.Duration(in.Until).Round(time.Millisecond))

	second := int64(time.Second)
	admitted := 0
	for range 80 {
		if lim.AllowAt(second, "acme", 1) {
			admitted++
		}
	}
	fmt.Println("admitted after a second:", admitted, "(the burst)")
	fmt.Println("at the lease's end:", lim.AllowAt(in.Until, "acme", 1))
	// Output:
	// installed: true until 9.495s
	// admitted after a second: 50 (the burst)
	// at the lease's end: false
}
