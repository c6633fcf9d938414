package chaos

import (
	"bytes"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/eventlog"
)

// countedCheck runs cfg with broken planted, writing its decisions as
// counts over every (eventlog.Counter, as a region agent's File does by
// default), and checks that log as afloat quota check would. It returns
// the live summary and the counted check's result.
func countedCheck(t *testing.T, cfg Config, every time.Duration, broken ...faults) (Summary, eventlog.CheckResult) {
	t.Helper()
	var buf bytes.Buffer
	w := eventlog.NewJSONWriter(&buf)
	counter, err := eventlog.NewCounter(w, every)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Log = counter
	sum := mustRun(t, cfg, broken...)
	counter.FlushAll(int64(cfg.Duration))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte(`"ev":"admit"`)) {
		t.Fatal("the counted log holds admit lines")
	}
	res, err := eventlog.CheckLogs([]eventlog.Log{{Name: "counted.jsonl", R: &buf}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Admitted != sum.Admitted || res.Counts == 0 || res.CountInterval > int64(every) || res.Counted == "" {
		t.Fatalf("counted: admitted %d (live %d), %d counts over up to %v, verdict %q", res.Admitted, sum.Admitted, res.Counts,
			time.Duration(res.CountInterval), res.Counted)
	}
	return sum, res
}

// TestCountedLogHolds: a correct run's counted log passes the checker —
// also where the run comes within a token of R·Δ + B
// (TestBoundIsApproached's schedule, without caches), so that the slack
// keeps a correct log from failing however tight it runs — and what the
// counted check finds lies within the slack it states (R·I: 500 tokens a
// second of R over the interval).
func TestCountedLogHolds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		every time.Duration
	}{
		{"faults, 1s", Config{Seed: 9, Duration: 90 * s}, time.Second},
		{"faults, 100ms", Config{Seed: 9, Duration: 90 * s}, 100 * time.Millisecond},
		{"at the bound, 100ms", Config{Seed: 10, Mode: quota.Hard, Duration: 90 * s, Schedule: boundSchedule(0.01), NoCaches: true}, 100 * time.Millisecond},
		{"at the bound, 1s", Config{Seed: 10, Mode: quota.Hard, Duration: 90 * s, Schedule: boundSchedule(0.01), NoCaches: true}, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, res := countedCheck(t, tc.cfg, tc.every)
			mustHold(t, sum)
			if res.Violations != 0 {
				t.Fatalf("%d violations in the counted log of a correct run: %v", res.Violations, res.Messages)
			}
			if want := 500 * tc.every.Seconds(); res.Slack != want || res.WorstExcess > res.Slack {
				t.Fatalf("slack %v (want %v), worst excess %v", res.Slack, want, res.WorstExcess)
			}
			t.Logf("live worst excess %.2f; counted %.2f, slack %v: %s", sum.WorstExcess, res.WorstExcess, res.Slack, res.Counted)
			if tc.cfg.Schedule != nil && res.WorstExcess <= 0 {
				t.Fatalf("at the bound, the counted check found %v: the slack would not be needed", res.WorstExcess)
			}
		})
	}
}
