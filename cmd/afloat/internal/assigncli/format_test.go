package assigncli

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/afloat/afloat/assign"
	"github.com/afloat/afloat/assign/proxypool"
)

// TestFormatters: what each command prints, byte for byte, from values
// made by hand (the commands' own tests run them against a redis-server).
func TestFormatters(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 59, 20, 313e6, time.UTC)
	ms := []assign.Member{{Name: "a", Count: 3, Active: true}, {Name: "b", Count: 5, Failures: 2}}
	st := assign.Status{Pool: "keys", Now: now, Settings: assign.Settings{EvictAfter: 5},
		Members: []assign.Member{
			{Name: "b", Count: 0, Active: true, Weight: 1, Concurrency: 1},
			{Name: "k2", Count: 2, Active: true, Weight: 3, Limit: &assign.Limit{Rate: 60, Per: time.Minute, Burst: 2}, CoolingUntil: now.Add(810 * time.Millisecond)},
			{Name: "a", Count: 1, Active: true, Weight: 1, Concurrency: 1, InFlight: 1, CoolingUntil: now.Add(time.Hour)},
		},
		Leases:     []assign.Lease{{Member: "a", ID: "1", Deadline: now.Add(time.Hour)}},
		OpenLeases: 1,
	}
	for i, tc := range []struct {
		name  string
		write func(*bytes.Buffer) error
		want  string
	}{
		{"members, a table", func(w *bytes.Buffer) error { return writeMembers(w, ms, "table") },
			"MEMBER  COUNT  STATE    FAILURES\na       3      active   0\nb       5      removed  2\n"},
		{"members, JSON lines", func(w *bytes.Buffer) error { return writeMembers(w, ms[:1], "jsonl") },
			`{"member":"a","count":3,"active":true,"failures":0}` + "\n"},
		{"members, a format unknown", func(w *bytes.Buffer) error {
			fmt.Fprint(w, writeMembers(w, ms, "xml"))
			return nil
		}, `assign: invalid argument: format "xml": want table or jsonl`},
		{"added", func(w *bytes.Buffer) error {
			if err := writeAdded(w, "proxies", assign.AddResult{Added: 2}); err != nil {
				return err
			}
			return writeAdded(w, "proxies", assign.AddResult{Added: 1, Active: 1, Removed: 2})
		}, "added 2 to pool \"proxies\"\n" +
			"added 1 to pool \"proxies\"; 1 already active (counts untouched); 2 removed (afloat assign restore brings them back)\n"},
		{"health", func(w *bytes.Buffer) error {
			return writeHealth(w, []proxypool.Health{
				{Proxy: "http://127.0.0.1:3128", Healthy: true, Status: 200, Took: 12 * time.Millisecond},
				{Proxy: "http://127.0.0.1:1", Took: time.Millisecond, Err: "connection refused"},
			})
		}, "PROXY                  HEALTHY  STATUS  TOOK  ERROR\n" +
			"http://127.0.0.1:3128  true     200     12ms  -\n" +
			"http://127.0.0.1:1     false    -       1ms   connection refused\n" +
			"1 of 2 healthy\n"},
		{"a check's report", func(w *bytes.Buffer) error {
			return writeCheckReport(w, "proxies", proxypool.Report{
				Health: []proxypool.Health{{Proxy: "http://127.0.0.1:3128", Healthy: true, Status: 200, Took: 12 * time.Millisecond}},
				Joined: []string{"http://127.0.0.1:3128"},
			})
		}, "PROXY                  HEALTHY  STATUS  TOOK  ERROR\n" +
			"http://127.0.0.1:3128  true     200     12ms  -\n" +
			"1 of 1 healthy\n" +
			"pool \"proxies\": 1 joined, 0 restored, 0 left\n"},
		{"status, a table", func(w *bytes.Buffer) error { return writeStatus(w, st, "table") },
			"pool \"keys\" at 2026-12-02T10:59:20.313Z (Redis's clock): evict after 5 failures in a row (0: never), last resort fail\n" +
				"MEMBER  COUNT  WEIGHT  LIMIT            IN FLIGHT  STATE    STREAK  FAILURES  COOLING UNTIL\n" +
				"b       0      1       -                0/1        active   0       0         -\n" +
				"k2      2      3       60/1m0s burst 2  0          cooling  0       0         2026-12-02T10:59:21.123Z (in 810ms)\n" +
				"a       1      1       -                1/1        full     0       0         2026-12-02T11:59:20.313Z (in 1h0m0s)\n" +
				"1 leases open (pick --lease), the first to end first:\n" +
				"LEASE  MEMBER  DEADLINE\n" +
				"1      a       2026-12-02T11:59:20.313Z (in 1h0m0s)\n"},
		{"status, JSON", func(w *bytes.Buffer) error {
			return writeStatus(w, assign.Status{Pool: "p", Now: now, Members: ms[:1]}, "json")
		}, `{"pool":"p","now":"2026-12-02T10:59:20.313Z","settings":{"evict_after":0,"last_resort":"fail"},"members":[{"member":"a","count":3,"active":true,"failures":0}],"open_leases":0}` + "\n"},
		{"cooling", func(w *bytes.Buffer) error {
			return writeCooling(w, "keys", []string{"k1", "k2"}, []time.Time{now, now.Add(time.Second)})
		}, "\"k1\" in pool \"keys\" cools down until 2026-12-02T10:59:20.313Z\n\"k2\" in pool \"keys\" cools down until 2026-12-02T10:59:21.313Z\n"},
		{"in flight, a table", func(w *bytes.Buffer) error { return writeInFlight(w, "llm", ms, 1, "table") },
			"pool \"llm\": 1 leases open (expired ones not yet reclaimed included)\n" +
				"MEMBER  IN FLIGHT  STATE\na       3          active\nb       5          removed\n"},
		{"in flight, JSON", func(w *bytes.Buffer) error { return writeInFlight(w, "llm", ms, 1, "json") },
			`{"pool":"llm","open":1,"members":[{"member":"a","in_flight":3,"active":true},{"member":"b","in_flight":5,"active":false}]}` + "\n"},
		{"in flight, a format unknown", func(w *bytes.Buffer) error {
			fmt.Fprint(w, writeInFlight(w, "llm", ms, 1, "jsonl"))
			return nil
		}, `assign: invalid argument: format "jsonl": want table or json`},
	} {
		var w bytes.Buffer
		if err := tc.write(&w); err != nil || w.String() != tc.want {
			t.Errorf("step %d (%s): %v\n%s\nwant\n%s", i, tc.name, err, w.String(), tc.want)
		}
	}
}
