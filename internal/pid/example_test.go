package pid_test

import (
	"fmt"

	"github.com/afloat/afloat/internal/pid"
)

// A per-P slot: each goroutine adds to the counter of the P it runs on,
// and a reader sums them.
func Example() {
	counts := make([]int, pid.N())
	counts[pid.P()%len(counts)]++
	total := 0
	for _, c := range counts {
		total += c
	}
	fmt.Println(total)
	// Output: 1
}
