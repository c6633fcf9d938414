package pid

import (
	"runtime"
	_ "unsafe" // for go:linkname
)

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// P returns the number of the P the calling goroutine runs on, from 0 to
// GOMAXPROCS−1 at the time of the call (a hint: see the package comment).
func P() int {
	p := procPin()
	procUnpin()
	return p
}

// N is the number of Ps now: runtime.GOMAXPROCS(0).
func N() int { return runtime.GOMAXPROCS(0) }
