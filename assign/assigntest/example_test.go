package assigntest_test

import (
	"testing"

	"github.com/afloat/afloat/assign/assigntest"
)

// In a test: a redis-server of the test's own, stopped when it ends.
func ExampleStart() {
	var t *testing.T // the test's
	srv := assigntest.Start(t)
	srv.MustDo("SCRIPT", "FLUSH") // administration, on a connection of its own
	srv.Restart()                 // SHUTDOWN SAVE and start again: data kept, scripts lost
	_ = srv.URL                   // redis://127.0.0.1:PORT for the code under test
}
