package chaos_test

import (
	"fmt"
	"strings"
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

// The checker reads a log alone. This one admits 700 tokens in one
// instant for a tenant of R = 500/s and B = 600: 100 over R·Δ + B.
func ExampleChecker() {
	log := `{"t_ns":0,"ev":"start","tenant":"acme","rate":500,"burst":600,"n":1,"why":"best-effort"}
{"t_ns":1000,"ev":"admit","tenant":"acme","region":"eu","n":700}
{"t_ns":2000,"ev":"stop"}
`
	chk := chaos.NewChecker()
	if err := chaos.ReadLog(strings.NewReader(log), chk); err != nil {
		panic(err)
	}
	rep := chk.Finish(2000)
	fmt.Printf("violations: %d, worst excess %.0f tokens\n", rep.Violations, rep.WorstExcess)
	// Output:
	// violations: 1, worst excess 100 tokens
}
