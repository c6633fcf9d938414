package overload

import (
	"os"
	"testing"
)

// TestMain lets this test binary be the server process of a live
// comparison: RunLive starts it again with LiveServerEnv set.
func TestMain(m *testing.M) {
	ServeLiveIfChild()
	os.Exit(m.Run())
}
