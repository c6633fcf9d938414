package loadgen

import (
	"slices"
	"time"
)

// Result is what Spin measured, each list sorted: Lat, each answer's
// latency from its request's send; Sched, from its scheduled time — what
// a caller waits, a backlog included (a stalled server, a late
// generator), so that it cannot hide (coordinated omission); Lag, how far
// each send was behind its schedule (the generator late, or every
// connection awaiting an answer); Own, how late the generator's loop
// first saw each request due — the part of its lateness no server
// caused: when Own's p99 nears a latency target, the run cannot tell a
// server that meets the target from one that misses it. Gaps counts the
// times the generator's own loop did not run for over 0.5 ms, MaxGap the
// longest: a latency measured across one is the machine's, not the
// server's. Conns is how many connections it opened. Steal is, CPU by
// CPU, the time the hypervisor ran something else while that CPU had
// work (/proc/stat's steal column, in its ticks of 10 ms) over the run:
// the machine's disturbance of the server's core as well as the
// generator's, which the generator's own stalls cannot see; nil where
// the kernel does not say.
type Result struct {
	Lat, Sched, Lag, Own []time.Duration
	Elapsed              time.Duration
	Gaps                 int
	MaxGap               time.Duration
	Conns                int
	Steal                []time.Duration
}

// Pct is the p quantile of sorted latencies, 0 for none.
func Pct(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	return lat[min(len(lat)-1, int(p*float64(len(lat))))]
}

func (r *Result) sort() {
	slices.Sort(r.Lat)
	slices.Sort(r.Sched)
	slices.Sort(r.Lag)
	slices.Sort(r.Own)
}

// A Wire is the protocol Spin speaks; NewConn is its state on a new
// connection.
type Wire interface {
	NewConn() Conn
}

// A Conn is a Wire's side of one connection, driven by one goroutine.
// Spin writes Hello once when it connects and Request for each request
// (at most one awaits its answer on a connection at a time), and hands
// Read every byte the connection receives that Read has not yet
// consumed, with whether a request awaits its answer. Read returns how
// many bytes it consumed, whether they completed the answer, and bytes
// to write back at once (a protocol's acknowledgements); an error ends
// the run.
type Conn interface {
	Hello() []byte
	Request() []byte
	Read(b []byte, waiting bool) (used int, answered bool, reply []byte, err error)
}
