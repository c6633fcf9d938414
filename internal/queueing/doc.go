// Package queueing holds the queueing formulas afloat's models share:
// Erlang B by the stable recursion, Erlang C, the tail of the waiting time
// of an M/M/N queue and the approximate response-time quantiles built on
// them.
//
// Everything here is a pure function of its arguments:
//
//	q := queueing.MMN{Lambda: 1125, S: 0.074, N: 160}
//	c := q.ErlangC()
//	timeouts := q.WaitExceeds(c, 2) // P(W > 2 s)
//	p99 := q.P99(c)                 // seconds
//
// Sources: any queueing text (Kleinrock, Queueing Systems vol. 1;
// Harchol-Balter, Performance Modeling and Design of Computer Systems) and
// Little's law (J. D. C. Little, 1961).
package queueing
