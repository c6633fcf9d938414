package live

import (
	"os"
	"testing"
	"time"
)

// TestMain lets this test binary be the server process of a live
// comparison (Run starts it again with ServerEnv set), and the CPU hog of
// TestBusyMachineIsFlagged (hogEnv set: it burns one core for as long as
// the variable says, then exits).
func TestMain(m *testing.M) {
	ServeIfChild()
	if d, err := time.ParseDuration(os.Getenv(hogEnv)); err == nil {
		hog(d)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const hogEnv = "AFLOAT_TEST_HOG"

var hogSink int

// hog spins on one core for d.
func hog(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := range 1 << 20 {
			hogSink += i
		}
	}
}
