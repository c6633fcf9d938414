package chaos_test

import (
	"fmt"
	"time"

	"github.com/afloat/afloat/quota/chaos"
)

// A seed's run under every fault, checked: the bound held, and the run
// replays exactly from its seed.
func ExampleRun() {
	sum, err := chaos.Run(chaos.Config{Seed: 7, Duration: time.Minute})
	if err != nil {
		panic(err)
	}
	again, _ := chaos.Run(chaos.Config{Seed: 7, Duration: time.Minute})
	fmt.Println("violations:", sum.Violations)
	fmt.Println("within R·Δ + B:", sum.WorstExcess <= 0)
	fmt.Println("replays:", sum.Admitted == again.Admitted && sum.Leases == again.Leases)
	// Output:
	// violations: 0
	// within R·Δ + B: true
	// replays: true
}
