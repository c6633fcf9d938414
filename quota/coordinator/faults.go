//go:build !mutation

package coordinator

// faults are the deliberate mistakes the chaos harness plants to show that
// its checker catches each (its mutation checks). Only a build with the
// tag mutation has them (faults_mutation.go); in every other build each
// check is the constant false, and the compiler drops the code it guards.
type faults struct{}

func (faults) fullToEvery() bool        { return false }
func (faults) reuseBeforeConfirm() bool { return false }
func (faults) noIncarnations() bool     { return false }
func (faults) noRestoreFence() bool     { return false }
func (faults) noLeaderProof() bool      { return false }
