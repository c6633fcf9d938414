package overload_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/afloat/afloat/overload"
)

// The seed's game 1: two CPUs, three units of work a request, one request
// a period. The first request takes four periods instead of three.
func ExamplePlayGame() {
	g, err := overload.PlayGame("game1", 5)
	if err != nil {
		panic(err)
	}
	for _, p := range g.Periods {
		fmt.Printf("period %d: %d in work\n", p.Period, p.Inside)
	}
	fmt.Println("the first request took", g.Requests[0].Took, "periods")
	// Output:
	// period 1: 1 in work
	// period 2: 2 in work
	// period 3: 3 in work
	// period 4: 4 in work
	// period 5: 4 in work
	// the first request took 4 periods
}

// The database scenario: the asynchronous server takes every connection of
// the shared database in a burst, and the other service on it fails; a
// bulkhead of 20 inside and 20 outside keeps both from happening.
func ExampleCompare() {
	runs, err := overload.Compare(overload.Config{Profile: "database", Seed: 1, Duration: 120})
	if err != nil {
		panic(err)
	}
	for _, r := range runs {
		s := r.Summary
		fmt.Printf("%-10s refused for want of a connection: %3d; the other service's worst second: %2.0f %% errors\n",
			s.Run, s.Refused, 100*s.OtherWorstSecond)
	}
	// Output:
	// no limit   refused for want of a connection: 170; the other service's worst second: 30 % errors
	// 20 threads refused for want of a connection:   0; the other service's worst second:  0 % errors
	// 20/20      refused for want of a connection:   0; the other service's worst second:  0 % errors
}

// A run with the bulkhead the seed calls the winner: 100 inside, 100
// outside, through the half-time peak. No request takes more than twice
// the nominal second.
func ExampleRun() {
	r, err := overload.Run(overload.Config{Profile: "worldcup", Inside: 100, Outside: 100, Seed: 1, Duration: 5400})
	if err != nil {
		panic(err)
	}
	fmt.Printf("worst %.2f× nominal, %d clients gave up\n", r.Summary.WorstResponse, r.Summary.Timeouts)
	// Output:
	// worst 2.00× nominal, 0 clients gave up
}

// The profiles a run can take, as the lab's help lists them.
func ExampleWriteProfiles() {
	var b strings.Builder
	overload.WriteProfiles(&b)
	fmt.Println(strings.Count(b.String(), "\n") == len(overload.Profiles()), strings.HasPrefix(b.String(), "  worldcup    World Cup day"))
	// Output: true true
}

// afloat's hypothesis for the seed's death, put to the test: the World
// Cup day without a limit and with clients who never try again recovers
// on the linear server, and dies on the non-linear one.
func ExampleVariants() {
	runs, err := overload.VariantsContext(context.Background(), overload.Config{Profile: "worldcup", Seed: 1, Duration: 5400})
	if err != nil {
		panic(err)
	}
	for _, r := range runs {
		s := r.Summary
		recovery := "never"
		if s.RecoverySeconds >= 0 {
			recovery = fmt.Sprintf("after %.0f s", s.RecoverySeconds)
		}
		fmt.Printf("alpha %.1f, %d retries: recovers %s\n", r.Config.Alpha, s.Retries, recovery)
	}
	// Output:
	// alpha 0.0, 0 retries: recovers after 139 s
	// alpha 0.5, 0 retries: recovers never
}
