package chaos_test

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/chaos"
)

// TestRunSeries: a run's series is one CSV row a step, the offered and
// admitted tokens of each region and the tenant's rate; a step or a
// configuration out of range is refused before the run, with nothing
// written.
func TestRunSeries(t *testing.T) {
	var out bytes.Buffer
	sum, err := chaos.RunSeries(&out, chaos.Config{Seed: 2, Duration: 5 * time.Second, NoFaults: true}, time.Second)
	if err != nil || !sum.OK() {
		t.Fatalf("RunSeries: %+v, %v", sum, err)
	}
	sc := bufio.NewScanner(&out)
	sc.Scan()
	if sc.Text() != "t_s,offered_eu,admitted_eu,offered_us,admitted_us,offered_ap,admitted_ap,admitted_total,rate" {
		t.Fatalf("header %q", sc.Text())
	}
	rows := 0
	for sc.Scan() {
		rows++
		if f := strings.Split(sc.Text(), ","); len(f) != 9 || f[8] != "500" {
			t.Fatalf("row %q: want 9 fields ending in the rate, 500", sc.Text())
		}
	}
	if rows != 5 {
		t.Fatalf("%d rows for 5 s in steps of 1 s", rows)
	}
	for i, tc := range []struct {
		cfg  chaos.Config
		step time.Duration
		want string
	}{
		{chaos.Config{}, time.Millisecond, "step 1ms: want 10ms to 1h0m0s"},
		{chaos.Config{}, 2 * time.Hour, "step 2h0m0s"},
		{chaos.Config{Duration: time.Millisecond}, time.Second, "duration 1ms: want 1s to 24h"},
	} {
		out.Reset()
		if _, err := chaos.RunSeries(&out, tc.cfg, tc.step); !errors.Is(err, quota.ErrConfig) || !strings.Contains(err.Error(), tc.want) || out.Len() != 0 {
			t.Errorf("step %d: RunSeries = %v, wrote %d bytes; want %q and nothing", i, err, out.Len(), tc.want)
		}
	}
}
