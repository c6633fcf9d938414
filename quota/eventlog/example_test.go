package eventlog_test

import (
	"fmt"
	"strings"

	"github.com/afloat/afloat/quota/eventlog"
)

// The checker reads a log alone. This one admits 700 tokens in one
// instant for a tenant of R = 500/s and B = 600: 100 over R·Δ + B.
func ExampleChecker() {
	log := `{"t_ns":0,"ev":"start","tenant":"acme","rate":500,"burst":600,"n":1,"why":"best-effort"}
{"t_ns":1000,"ev":"admit","tenant":"acme","region":"eu","n":700}
{"t_ns":2000,"ev":"stop"}
`
	chk := eventlog.NewChecker()
	if err := eventlog.ReadLog(strings.NewReader(log), chk); err != nil {
		panic(err)
	}
	rep := chk.Finish(2000)
	fmt.Printf("violations: %d, worst excess %.0f tokens\n", rep.Violations, rep.WorstExcess)
	// Output:
	// violations: 1, worst excess 100 tokens
}

// A cluster's logs, one per process, merged and checked against the
// limits its operator gives: the coordinator granted a lease, the region
// installed it and admitted under it.
func ExampleCheckLogs() {
	coordinator := `{"t_ns":0,"ev":"start","tenant":"acme","rate":500,"burst":6000,"n":3,"why":"hard"}
{"t_ns":1000,"ev":"lease","tenant":"acme","region":"eu","id":1,"epoch":1,"rate":100,"burst":1000,"activates_ns":1000,"expires_ns":10000000000}
{"t_ns":9000000000,"ev":"stop"}
`
	region := `{"t_ns":0,"ev":"start","tenant":"acme","rate":500,"burst":6000,"n":3,"why":"hard"}
{"t_ns":2000,"ev":"install","tenant":"acme","region":"eu","id":1}
{"t_ns":3000,"ev":"admit","tenant":"acme","region":"eu","n":900}
{"t_ns":8000000000,"ev":"stop"}
`
	limits, err := eventlog.ParseLimits("acme:500:6000")
	if err != nil {
		panic(err)
	}
	res, err := eventlog.CheckLogs([]eventlog.Log{
		{Name: "coordinator.jsonl", R: strings.NewReader(coordinator)},
		{Name: "eu.jsonl", R: strings.NewReader(region)},
	}, []eventlog.Limits{limits})
	if err != nil {
		panic(err)
	}
	fmt.Printf("violations: %d, admitted %d, verified %v\n", res.Violations, res.Admitted, res.Verified)
	// Output:
	// violations: 0, admitted 900, verified [acme]
}

// An event written as a log line and read back.
func ExampleParseEvent() {
	e := eventlog.Event{T: 1500, Kind: eventlog.Admit, Tenant: "acme", Region: "eu", N: 2}
	line := e.AppendJSON(nil)
	fmt.Print(string(line))
	back, err := eventlog.ParseEvent(line)
	if err != nil {
		panic(err)
	}
	fmt.Println(back.Kind, back.Tenant, back.Region, back.N)
	// Output:
	// {"t_ns":1500,"ev":"admit","tenant":"acme","region":"eu","n":2}
	// admit acme eu 2
}
