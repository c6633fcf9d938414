//go:build !unix

package remote

import "time"

// cpuTime is 0 where the process's CPU time is not read: cpu-ns/request
// is then 0.
func cpuTime() time.Duration { return 0 }
