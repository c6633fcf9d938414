package live

import (
	"os"
	"testing"
)

// TestMain lets this test binary be the server process of a live
// comparison: Run starts it again with ServerEnv set.
func TestMain(m *testing.M) {
	ServeIfChild()
	os.Exit(m.Run())
}
