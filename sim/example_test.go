package sim_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/afloat/afloat/sim"
)

// The opening minute of the steady scenario, noise off.
func ExampleRun() {
	frames, err := sim.Run(sim.Config{Scenario: "steady", Seed: 1, Minutes: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	f := frames[0]
	fmt.Printf("%s: %.0f req/s, %d serving, hit %.1f%%, DB %.1f%%, %.2f $/h, burn %.1f×\n",
		f.Clock, f.RequestsPerS, f.Serving, 100*f.CacheHit, 100*f.DBUtilization, f.FleetCostPerH, f.Burn1h)
	// Output:
	// 12:00: 1125 req/s, 10 serving, hit 77.1%, DB 19.3%, 4.00 $/h, burn 0.0×
}

// A rollback in the bad-deploy scenario: five minutes billed twice, then the
// traffic is back on the good build.
func ExampleSim_Step() {
	sc, _ := sim.Lookup("bad-deploy")
	s, err := sim.New(sc, 1, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	for m := 0; m < 30; m++ {
		var actions []sim.Action
		if m == 20 {
			actions = append(actions, sim.Press(m, sim.ControlRollback))
		}
		f, err := s.Step(actions)
		if err != nil {
			fmt.Println(err)
			return
		}
		if m >= 19 && m <= 26 {
			fmt.Printf("%s bad build %3.0f%%  fleet %5.2f $/h\n", f.Clock, 100*f.BadBuildShare, f.FleetCostPerH)
		}
	}
	// Output:
	// 09:19 bad build 100%  fleet  4.40 $/h
	// 09:20 bad build 100%  fleet  8.80 $/h
	// 09:21 bad build 100%  fleet  8.80 $/h
	// 09:22 bad build 100%  fleet  8.80 $/h
	// 09:23 bad build 100%  fleet  8.80 $/h
	// 09:24 bad build 100%  fleet  8.80 $/h
	// 09:25 bad build   0%  fleet  4.40 $/h
	// 09:26 bad build   0%  fleet  4.40 $/h
}

func ExampleParseActions() {
	file := `{"minute": 16, "control": "heavy_feature", "value": false}
{"minute": 15, "control": "rollback"}
{"minute": 17, "control": "fleet_floor", "value": 99}
`
	_, err := sim.ParseActions(strings.NewReader(file), 120)
	fmt.Println(err)

	actions, _ := sim.ParseActions(strings.NewReader(file[:strings.LastIndex(file[:len(file)-1], "\n")+1]), 120)
	sim.WriteActions(os.Stdout, actions)
	// Output:
	// sim: actions line 3: field "value": fleet_floor takes an integer from 0 to 40, got 99
	// {"minute":15,"control":"rollback"}
	// {"minute":16,"control":"heavy_feature","value":false}
}
