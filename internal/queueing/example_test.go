package queueing_test

import (
	"fmt"

	"github.com/afloat/afloat/internal/queueing"
)

func ExampleErlangC() {
	// 10 Erlangs offered to 12 agents: how many callers wait?
	fmt.Printf("%.3f\n", queueing.ErlangC(10, 12))
	// Output: 0.449
}

func ExampleMMN() {
	q := queueing.MMN{Lambda: 150, S: 0.1, N: 16}
	c := q.ErlangC()
	fmt.Printf("utilization %.1f%%, wait probability %.3f\n", 100*q.Utilization(), c)
	fmt.Printf("P(W > 0.5 s) = %.4f, p99 ≈ %.0f ms\n", q.WaitExceeds(c, 0.5), 1000*q.P99(c))
	// Output:
	// utilization 93.8%, wait probability 0.730
	// P(W > 0.5 s) = 0.0049, p99 ≈ 890 ms
}
