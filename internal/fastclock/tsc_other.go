//go:build !amd64

package fastclock

func rdtsc() uint64 { return 0 }

func haveTSC() (bool, string) { return false, "no TSC on this architecture" }
