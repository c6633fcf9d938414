package overload

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

// TestCompareConcurrently: the comparison's runs, side by side on their
// goroutines, give what each run gives alone, and a cancelled comparison
// stops with the context's error. make test runs it under the race
// detector (the model's other tests run on one goroutine, without it).
func TestCompareConcurrently(t *testing.T) {
	base := Config{Profile: "overload2x", Seed: 3, Duration: 5}
	got, err := Compare(base)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Runs(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(runs) {
		t.Fatalf("%d results for %d runs", len(got), len(runs))
	}
	for i, c := range runs {
		alone, err := Run(c)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[i].Summary, alone.Summary) {
			t.Errorf("step %d: run side by side %+v, alone %+v", i, got[i].Summary, alone.Summary)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := CompareContext(ctx, base); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled comparison: %v, want context.Canceled", err)
	}
}
