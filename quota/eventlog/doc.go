// Package eventlog is the global quota's event log: what the components
// of a run say they did, one JSON line an event, and the checker that
// proves from those lines alone that the run kept its promises. The chaos
// harness (quota/chaos) writes it in virtual time; the real processes
// (coordinator replicas, quota/coordinator/replica, and region agents,
// quota/agent) write it in Unix time, one file each, which afloat quota
// check merges and checks.
//
// An Event has a Kind (Admit, Lease, Install, …) and the fields that kind
// carries; AppendJSON writes it as a line and ParseEvent reads one back,
// refusing kinds no component writes. Writers take events one at a time
// (Writer): JSONWriter buffers them to an io.Writer, File appends them
// to a process's log file in whole lines — a line per decision, or with
// Counted the decisions counted per tenant over an interval (Counter);
// with Rotated, in parts of a size, which OpenLog reads back as one log —
// Tee sends them to several, and the Checker checks them as they come. ReadLog feeds a log to a Writer
// and refuses one that is empty or cut off before its run ended; Merge
// orders the events of several logs into one run; CheckLogs does it all
// for a cluster's files and checks the limits the logs state against the
// ones their operator gives (Limits, ParseLimits; LimitsFlag for a
// command line). StepEvents translates a coordinator's steps into events,
// for the coordinator's process and the chaos harness alike. WriteLine writes a line in the log's form that is no
// event: a run's summary, a check's result.
//
//	chk := eventlog.NewChecker()
//	if err := eventlog.ReadLog(f, chk); err != nil { ... } // not a whole log
//	rep := chk.Finish(end)
//	if rep.Violations > 0 { ... }                          // rep.Messages says which
//
// The Checker verifies the bound R·Δ + B (+ regions·E in best-effort
// mode) over every window — exactly for decision lines, within a slack of
// R times the interval for counts — the conservation invariants at every instant,
// that no share is granted twice, and that nothing is admitted without a
// lease in hard mode. The chaos harness's mutation tests plant each
// classic mistake in the real components and show the checker flags
// every one (docs/quota/design.md, "The chaos harness").
package eventlog
