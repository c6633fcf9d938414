package replica_test

import (
	"fmt"

	"github.com/afloat/afloat/quota/coordinator/replica"
)

// An operator's body for the tenants API: the config file's fields in its
// units; a field left out keeps its value in an update, and a key given
// twice is refused rather than the last one winning.
func ExampleDecodeTenantSpec() {
	s, err := replica.DecodeTenantSpec([]byte(`{"name":"acme","rate":300,"lease_duration":"5s","version":3}`))
	fmt.Println(s.Name, *s.Rate, s.Burst == nil, *s.LeaseDuration, s.Version, err)
	_, err = replica.DecodeTenantSpec([]byte(`{"name":"acme","rate":1,"rate":1e9}`))
	fmt.Println(err != nil)
	// Output:
	// acme 300 true 5s 3 <nil>
	// true
}
