//go:build !unix

package bots

import "time"

// cpuTime is 0 where the process's CPU time is not read: max-cpu-ms is
// then 0.
func cpuTime() time.Duration { return 0 }
