package settings_test

import (
	"fmt"

	"github.com/afloat/afloat/quota/internal/settings"
)

// The zero value plants no fault and keeps the monotonic clock.
func Example() {
	var s settings.Limiter
	fmt.Println(s.Clock == nil, s.Faults.Any())
	s.Faults.CachesOverBurst = true
	fmt.Println(s.Faults.Any())
	// Output:
	// true false
	// true
}
