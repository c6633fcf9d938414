package chaos

import (
	"reflect"
	"testing"
)

// TestRunManyConcurrently: seeds run on several goroutines report what
// they report one at a time. make test runs it under the race detector
// (the harness's other tests run on one goroutine, without it).
func TestRunManyConcurrently(t *testing.T) {
	cfg := Config{Duration: 60 * s}
	got, err := RunMany(cfg, 1, 6, 3)
	if err != nil {
		t.Fatal(err)
	}
	one, err := RunMany(cfg, 1, 6, 1)
	if err != nil {
		t.Fatal(err)
	}
	got.Elapsed, one.Elapsed = 0, 0
	if !reflect.DeepEqual(got.Failures, one.Failures) || got.Seeds != 6 || got.Violations != one.Violations ||
		!reflect.DeepEqual(got.Worst, one.Worst) {
		t.Errorf("3 workers %+v, 1 worker %+v", got, one)
	}
}
