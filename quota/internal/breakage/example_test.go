package breakage_test

import (
	"fmt"

	"github.com/afloat/afloat/quota/internal/breakage"
)

// The zero value is no fault; a mutation check sets one.
func Example() {
	var none breakage.Set
	one := breakage.Set{FullToEvery: true}
	fmt.Println(none.Any(), one.Any())
	// Output: false true
}
