package bots

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"
)

// TestSweepConcurrently: seeds played on several goroutines give what
// each seed gives alone, and a cancelled sweep stops with the context's
// error. make test runs it under the race detector (the model's other
// tests run on one goroutine, without it).
func TestSweepConcurrently(t *testing.T) {
	ctx := context.Background()
	got, err := Sweep(ctx, "bad-deploy", BotRunbook, 3, 8, 3)
	if err != nil {
		t.Fatal(err)
	}
	one, err := Sweep(ctx, "bad-deploy", BotRunbook, 3, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, one) {
		t.Errorf("3 workers %+v, 1 worker %+v", got, one)
	}
	for i, p := range got.Points {
		r := mustPlay(t, cfgOf("bad-deploy", 3+uint32(i)), BotRunbook)
		if want := math.Round(100*r.Score.Points) / 100; p != want {
			t.Errorf("step %d: seed %d scored %v in the sweep, %v alone", i, 3+i, p, want)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Sweep(cancelled, "bad-deploy", BotRunbook, 1, 100, 3); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled sweep: %v, want context.Canceled", err)
	}
}
