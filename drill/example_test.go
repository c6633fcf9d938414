package drill_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/afloat/afloat/drill"
	"github.com/afloat/afloat/sim"
)

// A bad deploy drilled at one simulated minute a second: the rollback
// pulled during 09:12 takes effect at 09:13, and the drill's frames are
// the model's for that run.
func ExampleDrill_Lever() {
	start := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	cfg := drill.Config{Scenario: "bad-deploy", Seed: 7, Speed: time.Second}
	d, err := drill.New(cfg, start)
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := d.Lever(start.Add(12500*time.Millisecond), sim.ControlRollback, 0)
	fmt.Println(a.Minute, a.Control, err)

	_, err = d.Lever(start.Add(13*time.Second), sim.ControlFleetFloor, 41)
	fmt.Println(err)

	_, err = d.Lever(d.End(), sim.ControlRollback, 0)
	fmt.Println(errors.Is(err, drill.ErrEnded))

	frames := d.Frames(d.End())
	for _, m := range []int{12, 13, 18} {
		f := frames[m]
		fmt.Printf("%s bad build %3.0f%%, rollback %d min left\n", f.Clock, 100*f.BadBuildShare, f.RollbackLeft)
	}
	fmt.Println(d.Run().Query().Encode())
	// Output:
	// 13 rollback <nil>
	// drill: invalid lever: value: fleet_floor takes an integer from 0 to 40, got 41
	// true
	// 09:12 bad build  75%, rollback 0 min left
	// 09:13 bad build 100%, rollback 5 min left
	// 09:18 bad build   0%, rollback 0 min left
	// actions=13%3Arollback&noise=1&scenario=bad-deploy&seed=7
}
