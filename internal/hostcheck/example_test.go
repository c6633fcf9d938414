package hostcheck_test

import (
	"fmt"

	"github.com/afloat/afloat/internal/hostcheck"
)

func ExampleNames_Allows() {
	names, err := hostcheck.New("quota.internal")
	if err != nil {
		panic(err)
	}
	for _, host := range []string{"127.0.0.1:7080", "quota.internal:7080", "evil.example:7080"} {
		fmt.Println(host, names.Allows(host))
	}
	// Output:
	// 127.0.0.1:7080 true
	// quota.internal:7080 true
	// evil.example:7080 false
}
