package rng_test

import (
	"fmt"

	"github.com/afloat/afloat/internal/rng"
)

func Example() {
	r := rng.New(1)
	fmt.Println(r.Uint32(), r.Uint32())

	// The same seed gives the same draws, on any machine.
	a, b := rng.New(42), rng.New(42)
	fmt.Println(a.Exp(6) == b.Exp(6), a.Poisson(250) == b.Poisson(250))
	// Output:
	// 2693262067 11749833
	// true true
}
