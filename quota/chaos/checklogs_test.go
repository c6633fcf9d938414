package chaos

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/afloat/afloat/quota/eventlog"
)

func logs(named ...string) []eventlog.Log {
	var out []eventlog.Log
	for i := 0; i < len(named); i += 2 {
		out = append(out, eventlog.Log{Name: named[i], R: strings.NewReader(named[i+1])})
	}
	return out
}

// TestCheckLogsForgedLimits: a log that states its own, larger R and B passes
// the checker, which holds a tenant to the limits its log states — and
// says so (unverified); given the true limits, the same log fails.
func TestCheckLogsForgedLimits(t *testing.T) {
	var buf bytes.Buffer
	w := eventlog.NewJSONWriter(&buf)
	mustRun(t, Config{Seed: 4, Duration: 30 * s, Log: w})
	w.Flush()
	real := buf.String()
	limits, err := eventlog.ParseLimits("acme:500:6000")
	if err != nil {
		t.Fatal(err)
	}
	// 30,000 tokens at once: far over R·Δ + B (500/s, 6,000) in any window.
	lines := strings.SplitAfter(real, "\n")
	at := -1
	for i, l := range lines {
		if strings.Contains(l, `"ev":"admit"`) && strings.Contains(l, `"region":"eu"`) {
			at = i
			break
		}
	}
	if at < 0 {
		t.Fatal("no admission in eu")
	}
	e, err := eventlog.ParseEvent([]byte(lines[at]))
	if err != nil {
		t.Fatal(err)
	}
	e.N = 30000
	over := strings.Join(lines[:at+1], "") + string(e.AppendJSON(nil)) + strings.Join(lines[at+1:], "")
	forged := strings.Replace(over, `"rate":500,"burst":6000`, `"rate":500000,"burst":600000`, 1)
	if forged == over {
		t.Fatalf("the run's start line is not R 500, B 6000: %q", lines[0])
	}

	res, err := eventlog.CheckLogs(logs("over.jsonl", over), nil)
	if err != nil || res.Violations == 0 {
		t.Fatalf("30,000 tokens at once under R 500, B 6000: %+v, %v; want violations", res, err)
	}
	res, err = eventlog.CheckLogs(logs("forged.jsonl", forged), nil)
	if err != nil || res.Violations != 0 || fmt.Sprint(res.Unverified) != "[acme]" {
		t.Fatalf("the forged log on its own: %+v, %v; want it to pass, acme unverified", res, err)
	}
	_, err = eventlog.CheckLogs(logs("forged.jsonl", forged), []eventlog.Limits{limits})
	if !errors.Is(err, eventlog.ErrLimitsMismatch) || !strings.Contains(err.Error(), "forged.jsonl: line 1:") || !strings.Contains(err.Error(), "R 500000") {
		t.Fatalf("the forged log with the true limits: %v; want %v naming the file, the line and both R", err, eventlog.ErrLimitsMismatch)
	}
	res, err = eventlog.CheckLogs(logs("real.jsonl", real), []eventlog.Limits{limits})
	if err != nil || res.Violations != 0 || fmt.Sprint(res.Verified) != "[acme]" {
		t.Fatalf("the real log with its limits: %+v, %v", res, err)
	}
}
