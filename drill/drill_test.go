package drill

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/afloat/afloat/sim"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func newDrill(t *testing.T, scenario string, seed uint32, speed time.Duration) *Drill {
	t.Helper()
	d, err := New(Config{Scenario: scenario, Seed: seed, Speed: speed}, t0)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// at is the wall instant a fraction into simulated minute m.
func at(d *Drill, m, frac float64) time.Time {
	return t0.Add(time.Duration((m + frac) * float64(d.speed)))
}

// TestConstantsExist: the model's constants the metrics read are there
// (constant panics otherwise, at init).
func TestConstantsExist(t *testing.T) {
	if clientTimeout != 2 || workersPerInstance != 16 || dbCapacity != 4000 {
		t.Errorf("client timeout %v s, %d workers, DB %v queries/s: want 2, 16, 4000", clientTimeout, workersPerInstance, dbCapacity)
	}
}

// TestLeverTakesEffectNextMinute: a lever pulled at any instant of
// minute m is recorded for minute m+1, and the drill's frames are the
// ones sim.Run gives for its run: the same model, the same actions.
func TestLeverTakesEffectNextMinute(t *testing.T) {
	d := newDrill(t, "bad-deploy", 7, 5*time.Second)
	for i, tc := range []struct {
		m, frac float64
		control sim.Control
		value   float64
		want    int
	}{
		{0, 0, sim.ControlFleetFloor, 12, 1},
		{3, 0.999, sim.ControlCacheTTL, 90, 4},
		{12, 0.5, sim.ControlRollback, 0, 13},
		{12, 0.6, sim.ControlHeavyFeature, 0, 13},
		{40, 0, sim.ControlShedLowPriority, 0.5, 41},
	} {
		a, err := d.Lever(at(d, tc.m, tc.frac), tc.control, tc.value)
		if err != nil || a.Minute != tc.want || a.Control != tc.control || a.Value != tc.value {
			t.Errorf("step %d: Lever at minute %v+%v = %+v, %v; want minute %d", i, tc.m, tc.frac, a, err, tc.want)
		}
	}
	frames := d.Frames(d.End())
	want, err := sim.Run(d.Run())
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 120 || !reflect.DeepEqual(frames, want) {
		t.Fatalf("the drill's %d frames differ from sim.Run's %d of %s", len(frames), len(want), d.Run().Query().Encode())
	}
	if frames[13].RollbackLeft != 5 || frames[13].HeavyFeature || frames[41].ShedLowPriority != 0.5 {
		t.Errorf("levers not in effect at their minutes: %+v, %+v", frames[13].Controls, frames[41].Controls)
	}
}

// TestLeverRefused: a lever the console would refuse, or one that would
// take effect after the drill, is refused with the field and the range
// named, and changes nothing.
func TestLeverRefused(t *testing.T) {
	d := newDrill(t, "steady", 1, time.Second)
	if _, err := d.Lever(at(d, 5, 0), sim.ControlWarmup, 0); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		m       float64
		control sim.Control
		value   float64
		is      error
		field   string
		msg     string
	}{
		{10, "warp_drive", 1, ErrInvalidLever, "control", `unknown control "warp_drive"; want one of fleet_floor,`},
		{10, sim.ControlFleetFloor, 41, ErrInvalidLever, "value", "fleet_floor takes an integer from 0 to 40, got 41"},
		{10, sim.ControlFleetFloor, 2.5, ErrInvalidLever, "value", "an integer from 0 to 40"},
		{10, sim.ControlTargetUtilization, 0.1, ErrInvalidLever, "value", "a number from 0.2 to 0.95"},
		{10, sim.ControlAutoscaling, 2, ErrInvalidLever, "value", "true or false"},
		{10, sim.ControlRollback, 1, ErrInvalidLever, "value", "no value (it is a button)"},
		{119.5, sim.ControlRollback, 0, ErrEnded, "", "its last minute, 13:59, is under way"},
		{120, sim.ControlRollback, 0, ErrEnded, "", "the drill has ended at 14:00"},
		{500, sim.ControlFleetFloor, 20, ErrEnded, "", "the drill has ended"},
	} {
		before := d.Actions()
		_, err := d.Lever(at(d, tc.m, 0), tc.control, tc.value)
		var le *LeverError
		switch {
		case !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.msg):
			t.Errorf("step %d: Lever(%s, %v) at minute %v = %v; want %v saying %q", i, tc.control, tc.value, tc.m, err, tc.is, tc.msg)
		case tc.is == ErrInvalidLever && (!errors.As(err, &le) || le.Field != tc.field):
			t.Errorf("step %d: %v: want field %q", i, err, tc.field)
		}
		if got := d.Actions(); !reflect.DeepEqual(got, before) {
			t.Errorf("step %d: actions %v after a refusal, want %v", i, got, before)
		}
	}
	if frames := d.Frames(d.End()); len(frames) != 120 || frames[6].WarmupLeft != 6 {
		t.Errorf("the warm-up pulled at minute 5 is not in minute 6's frame")
	}
}

// TestParseLever: a lever's body is the console's action without its
// minute; every refusal names its field.
func TestParseLever(t *testing.T) {
	for i, tc := range []struct {
		body    string
		control sim.Control
		value   float64
		field   string
		msg     string
	}{
		{body: `{"control": "fleet_floor", "value": 20}`, control: sim.ControlFleetFloor, value: 20},
		{body: `{"control": "rollback"}`, control: sim.ControlRollback},
		{body: `{"control": "heavy_feature", "value": false}`, control: sim.ControlHeavyFeature},
		{body: `{"control": "autoscaling", "value": true}`, control: sim.ControlAutoscaling, value: 1},
		{body: `{"control": "cache_ttl_s", "value": 1e2}`, control: sim.ControlCacheTTL, value: 100},
		{body: `{"control": "fleet_floor", "value": 99}`, field: "value", msg: "fleet_floor takes an integer from 0 to 40, got 99"},
		{body: `{"control": "fleet_floor", "value": "20"}`, field: "value", msg: "an integer from 0 to 40"},
		{body: `{"control": "fleet_floor"}`, field: "value", msg: "got no value"},
		{body: `{"control": "warp"}`, field: "control", msg: `unknown control "warp"`},
		{body: `{"value": 3}`, field: "control", msg: "missing; want one of fleet_floor"},
		{body: `{"minute": 3, "control": "rollback"}`, field: "minute", msg: "the drill sets the minute"},
		{body: `{"control": "rollback", "control": "warmup"}`, field: "control", msg: "given more than once"},
		{body: `{"control": "rollback", "who": "me"}`, field: "who", msg: "unknown"},
		{body: `{"control": "rollback", "value": null}`, field: "value", msg: "null"},
		{body: `[{"control": "rollback"}]`, field: "", msg: "want an object"},
		{body: ``, field: "", msg: "want an object"},
	} {
		c, v, err := ParseLever([]byte(tc.body))
		if tc.msg == "" {
			if err != nil || c != tc.control || v != tc.value {
				t.Errorf("step %d: ParseLever(%s) = %q, %v, %v; want %q, %v", i, tc.body, c, v, err, tc.control, tc.value)
			}
			continue
		}
		var le *LeverError
		if !errors.As(err, &le) || !errors.Is(err, ErrInvalidLever) || le.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("step %d: ParseLever(%s) = %v; want field %q saying %q", i, tc.body, err, tc.field, tc.msg)
		}
	}
}

// TestCountersGrowAtTheModelsRate: within a simulated minute every
// counter grows at the model's per-second figure for it, whatever the
// speed; the codes add up to the requests and their errors to the
// model's error rate; after the end the counters stand still at the
// model's counts scaled by the speed.
func TestCountersGrowAtTheModelsRate(t *testing.T) {
	for _, speed := range []time.Duration{time.Second, 5 * time.Second, RealTime} {
		d := newDrill(t, "bad-deploy", 3, speed)
		var whole float64
		for m := range 120 {
			a, b := d.sampleAt(at(d, float64(m), 0.25)), d.sampleAt(at(d, float64(m), 0.75))
			dt := speed.Seconds() / 2
			f := b.f
			rate := func(x, y float64) float64 { return (y - x) / dt }
			var total, errs float64
			for i, code := range codes {
				r := rate(a.c.requests[i], b.c.requests[i])
				total += r
				if code[0] == '5' {
					errs += r
				}
			}
			admitted := total - rate(a.c.requests[code429], b.c.requests[code429])
			hits := rate(a.c.hits, b.c.hits)
			misses := rate(a.c.misses, b.c.misses)
			for i, c := range []struct {
				what      string
				got, want float64
			}{
				{"requests/s", total, f.RequestsPerS},
				{"admitted/s", admitted, f.AdmittedPerS},
				{"error ratio", errs / admitted, f.ErrorRate},
				{"hit ratio", hits / (hits + misses), f.CacheHit},
				{"queries/s", rate(a.c.queries, b.c.queries), f.DBQueriesPerS},
				{"observed/s", rate(a.c.latCount, b.c.latCount), f.AdmittedPerS},
			} {
				if math.Abs(c.got-c.want) > 1e-6*(1+math.Abs(c.want)) {
					t.Fatalf("step %d: speed %v, minute %d: %s %v, want %v", i, speed, m, c.what, c.got, c.want)
				}
			}
			whole += f.RequestsPerS * 60
		}
		end := d.sampleAt(d.End().Add(time.Hour))
		var total float64
		for _, n := range end.c.requests {
			total += n
		}
		if want := whole * speed.Seconds() / 60; math.Abs(total-want) > 1e-6*want || !end.ended {
			t.Errorf("speed %v: %v requests counted by the end, want the model's %v × %v/60 s = %v", speed, total, whole, speed.Seconds(), want)
		}
	}
}

// TestLatencyHistogramHoldsTheModelsP99: the histogram's share of
// requests at most each bound is under 99 % below the model's p99 and at
// least 99 % above it, and nothing is observed past the client's timeout.
func TestLatencyHistogramHoldsTheModelsP99(t *testing.T) {
	d := newDrill(t, "surge", 11, time.Second)
	checked := 0
	for m := range 240 {
		d.advance(at(d, float64(m), 0))
		r, f := d.rates[m], d.frames[m]
		if f.AdmittedPerS == 0 {
			continue
		}
		p99 := f.P99Ms / 1000
		for i, b := range latencyBuckets {
			share := r.latency[i] / r.latCount
			if (b < p99*0.999 && share >= 0.99) || (b > p99*1.001 && share < 0.99-1e-9) {
				t.Fatalf("minute %d: p99 %.3f s, but %.4f of requests at most %v s", m, p99, share, b)
			}
		}
		if r.latency[len(latencyBuckets)-1] != r.latCount {
			t.Fatalf("minute %d: requests beyond the timeout", m)
		}
		if mean := r.latSum / r.latCount; mean <= 0 || mean > p99 && p99 < clientTimeout {
			t.Fatalf("minute %d: mean %v s beside p99 %v s", m, mean, p99)
		}
		checked++
	}
	if checked < 200 {
		t.Fatalf("%d minutes checked", checked)
	}
}

// TestBuildInfoFollowsDeploys: the version label changes at the deploy's
// minute and goes back when the rollback of it has completed.
func TestBuildInfoFollowsDeploys(t *testing.T) {
	d := newDrill(t, "bad-deploy", 1, time.Second)
	if _, err := d.Lever(at(d, 19, 0.5), sim.ControlRollback, 0); err != nil {
		t.Fatal(err)
	}
	for m := range 40 {
		s := d.sampleAt(at(d, float64(m), 0.5))
		want := "1.41.0"
		if m >= 10 && m < 25 {
			want = "1.42.0"
		}
		if s.version != want {
			t.Errorf("minute %d: build_info version %s, want %s (deploy at 10, rollback pressed for 20)", m, s.version, want)
		}
	}
}

func TestParseSpeed(t *testing.T) {
	for i, tc := range []struct {
		in   string
		want time.Duration
	}{{"realtime", time.Minute}, {"5s", 5 * time.Second}, {"100ms", 100 * time.Millisecond}, {"10m", 10 * time.Minute},
		{"99ms", 0}, {"11m", 0}, {"fast", 0}, {"5", 0}, {"", 0}} {
		got, err := ParseSpeed(tc.in)
		if got != tc.want || (tc.want == 0) != (err != nil) {
			t.Errorf("step %d: ParseSpeed(%q) = %v, %v; want %v", i, tc.in, got, err, tc.want)
		}
		if err != nil && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "want realtime")) {
			t.Errorf("step %d: %v", i, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Token = strings.Repeat("t", MinTokenBytes)
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Scenario = "doom" }, `scenario "doom": want one of`},
		{func(c *Config) { c.Speed = 0 }, "speed 0s: want a simulated minute in 100ms to 10m0s"},
		{func(c *Config) { c.Addr = "8081" }, `listen "8081": want host:port`},
		{func(c *Config) { c.Addr = "0.0.0.0:8081" }, "beyond loopback"},
		{func(c *Config) { c.Token = "short" }, "token of 5 bytes: want at least 16"},
		{func(c *Config) { c.AllowRemote, c.Token = true, "" }, "token of 0 bytes"},
	} {
		c := ok
		tc.change(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("step %d: Validate() = %v, want %q", i, err, tc.want)
		}
	}
	remote := ok
	remote.Addr, remote.AllowRemote = "0.0.0.0:8081", true
	if err := remote.Validate(); err != nil || !strings.Contains(remote.Warning(), "beyond loopback") {
		t.Errorf("allow-remote: %v, warning %q", err, remote.Warning())
	}
}

// FuzzParseLever: a lever's body is taken only as an action the console
// takes, and anything else is a LeverError naming a field.
func FuzzParseLever(f *testing.F) {
	for _, b := range []string{`{"control": "fleet_floor", "value": 20}`, `{"control": "rollback"}`, `{"control": "heavy_feature", "value": false}`,
		`{"control": "cache_ttl_s", "value": 1e2}`, `{"minute": 3}`, `{"control": "rollback", "control": "warmup"}`, `[]`, `{"value": null}`} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, v, err := ParseLever(body)
		var le *LeverError
		switch {
		case err == nil:
			if verr := (sim.Action{Control: c, Value: v}).Validate(1); verr != nil {
				t.Fatalf("ParseLever(%q) = %q, %v: the console refuses it: %v", body, c, v, verr)
			}
		case !errors.As(err, &le) || !errors.Is(err, ErrInvalidLever):
			t.Fatalf("ParseLever(%q): %v is not a LeverError", body, err)
		}
	})
}
