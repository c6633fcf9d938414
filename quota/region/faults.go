//go:build !mutation

package region

// faults are the deliberate mistakes the chaos harness plants to show that
// its checker catches each (its mutation checks). Only a build with the
// tag mutation has them (faults_mutation.go); in every other build each
// check is the constant false, and the compiler drops the code it guards.
type faults struct{}

func (faults) renewRefills() bool    { return false }
func (faults) cachesOverBurst() bool { return false }
