package chaos

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/afloat/afloat/internal/rng"
	"github.com/afloat/afloat/quota"
)

// Schedule is everything a run does to the system: the traffic, the
// faults, the clocks and the network. A seed draws one (Draw); tests
// script their own.
type Schedule struct {
	// Traffic sets each region's offered load, in tokens a second, from
	// each segment's At on; requests cost 1, 2 or 5 tokens (70/20/10 %).
	Traffic []Segment
	// Partitions cut a region off from every coordinator.
	Partitions []Cut
	// Outages stop the coordinator, in order and apart.
	Outages []Outage
	// Clocks are the regions' clocks, by region; CoordClocks the
	// coordinator processes', the k-th process taking the k-th (cycling).
	Clocks      map[string]Clock
	CoordClocks []Clock
	// Links are the network between each region and the coordinator.
	Links map[string]Link
	// ClockChanges change clocks during the run (Script makes them from
	// skew actions).
	ClockChanges []ClockChange
}

// Segment is a stretch of constant offered load.
type Segment struct {
	At    time.Duration
	Rates map[string]float64 // tokens a second, by region
}

// Cut is a partition of one region, [From, To).
type Cut struct {
	Region   string
	From, To time.Duration
}

// Outage is a coordinator failure at At. With Pause false the process
// dies and a successor starts Down later. With Pause true it freezes; a
// successor starts Down later (failover), each region keeps talking to
// the old process for Reconnect[region] more, and the old one wakes at
// Wake (after At) and handles everything sent to it meanwhile with the
// state it had — its writes are refused by the fenced ledger.
type Outage struct {
	At, Down  time.Duration
	Pause     bool
	Wake      time.Duration
	Reconnect map[string]time.Duration
}

// Clock is a node's monotonic clock: local = Offset + (1 + Drift)·t.
type Clock struct {
	Offset time.Duration
	Drift  float64
}

// Link is one region's network to the coordinator, both ways: each
// message takes Delay plus an exponential jitter of mean Jitter (so
// messages overtake each other), is lost with probability Loss and
// delivered twice with probability Dup.
type Link struct {
	Delay, Jitter time.Duration
	Loss, Dup     float64
}

// maxDrift is the clock drift the regions derate for (their default
// MaxDrift), and the most the harness gives a clock.
const maxDrift = 500e-6

// Traffic levels of a segment, as a share of R offered in all.
var levels = []struct {
	share, p float64
}{{0.05, 0.2}, {0.8, 0.35}, {1.3, 0.3}, {2.5, 0.15}}

// Draw draws the schedule of a seed: segments of 5 to 40 s at idle,
// steady, busy or surge load (5, 80, 130 or 250 % of R), split 60/30/10
// between the regions — and with Shift, any split, all of it into one
// region included; with Partition, one to three cuts of 5 to 60 s; with
// Crash, one or two outages, half of them pauses with a failover; with
// Skew, clock offsets of ±500 ms and drifts of ±500 ppm; with Dup, 0.5–3 %
// loss, 0.5–5 % duplication and reordering jitter. Without faults the
// network is 20 ms each way and every clock is true.
func Draw(c Config) *Schedule {
	c = c.withDefaults()
	r := rng.New(c.Seed ^ 0x9e3779b9)
	regions := c.Tenant.Regions
	s := &Schedule{Clocks: map[string]Clock{}, Links: map[string]Link{}}
	clock := func() Clock {
		if c.Faults&Skew == 0 {
			return Clock{}
		}
		return Clock{Offset: time.Duration(r.Uniform(-0.5, 0.5) * 1e9), Drift: r.Uniform(-maxDrift, maxDrift)}
	}
	for _, reg := range regions {
		s.Clocks[reg] = clock()
		l := Link{Delay: 20 * time.Millisecond}
		if c.Faults&Dup != 0 {
			l = Link{
				Delay:  time.Duration(r.Uniform(5, 60) * 1e6),
				Jitter: time.Duration(r.Uniform(5, 40) * 1e6),
				Loss:   r.Uniform(0.005, 0.03),
				Dup:    r.Uniform(0.005, 0.05),
			}
		}
		s.Links[reg] = l
	}
	for range 4 {
		s.CoordClocks = append(s.CoordClocks, clock())
	}

	// Traffic.
	splits := [][]float64{{0.6, 0.3, 0.1}}
	if c.Faults&Shift != 0 {
		splits = [][]float64{
			{0.6, 0.3, 0.1}, {0.1, 0.6, 0.3}, {0.3, 0.1, 0.6}, {0.3, 0.6, 0.1}, {0.6, 0.1, 0.3}, {0.1, 0.3, 0.6},
			{1.0 / 3, 1.0 / 3, 1.0 / 3}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1},
		}
	}
	for at := time.Duration(0); at < c.Duration; {
		u, level := r.Float64(), levels[len(levels)-1].share
		for _, l := range levels {
			if u < l.p {
				level = l.share
				break
			}
			u -= l.p
		}
		split := splits[int(r.Float64()*float64(len(splits)))%len(splits)]
		rates := map[string]float64{}
		for i, reg := range regions {
			w := 1 / float64(len(regions))
			if len(regions) == 3 {
				w = split[i]
			}
			rates[reg] = level * c.Tenant.Rate.Float() * w
		}
		s.Traffic = append(s.Traffic, Segment{At: at, Rates: rates})
		at += time.Duration(r.Uniform(5, 40) * 1e9)
	}

	if c.Faults&Partition != 0 {
		for range 1 + int(r.Float64()*3)%3 {
			from := time.Duration(r.Uniform(0, c.Duration.Seconds()) * 1e9)
			s.Partitions = append(s.Partitions, Cut{
				Region: regions[int(r.Float64()*float64(len(regions)))%len(regions)],
				From:   from, To: from + time.Duration(r.Uniform(5, 60)*1e9),
			})
		}
	}
	if c.Faults&Crash != 0 && c.Duration > time.Minute {
		n := 1 + int(r.Float64()*2)%2
		var ats []time.Duration
		for range n {
			ats = append(ats, time.Duration(r.Uniform(20, c.Duration.Seconds()-20)*1e9))
		}
		slices.Sort(ats)
		free := time.Duration(0)
		for _, at := range ats {
			at = max(at, free)
			o := Outage{At: at, Pause: r.Float64() < 0.5}
			if o.Pause {
				o.Down = time.Duration(r.Uniform(2, 10) * 1e9)
				o.Wake = o.Down + time.Duration(r.Uniform(1, 15)*1e9)
				o.Reconnect = map[string]time.Duration{}
				for _, reg := range regions {
					o.Reconnect[reg] = time.Duration(r.Uniform(0, 5) * 1e9)
				}
			} else {
				o.Down = time.Duration(r.Uniform(2, 30) * 1e9)
			}
			end := at + max(o.Down, o.Wake)
			if end >= c.Duration {
				break
			}
			s.Outages = append(s.Outages, o)
			free = end + 5*time.Second
		}
	}
	return s
}

func (s *Schedule) validate(c Config) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: schedule: "+format, append([]any{quota.ErrConfig}, args...)...)
	}
	known := func(r string) bool { return c.Tenant.HasRegion(r) }
	for i, seg := range s.Traffic {
		if i > 0 && seg.At < s.Traffic[i-1].At {
			return bad("traffic[%d] at %v: before the segment ahead of it", i, seg.At)
		}
		for r, v := range seg.Rates {
			if !known(r) || !(v >= 0 && v <= 1e7) {
				return bad("traffic[%d] region %q rate %v: want a known region and 0 to 1e7 tokens/s", i, r, v)
			}
		}
	}
	for i, p := range s.Partitions {
		if !known(p.Region) || p.To < p.From || p.From < 0 {
			return bad("partitions[%d]: region %q from %v to %v: want a known region and from ≤ to", i, p.Region, p.From, p.To)
		}
	}
	var free time.Duration
	for i, o := range s.Outages {
		if o.At < free || o.Down <= 0 || (o.Pause && o.Wake <= 0) {
			return bad("outages[%d] at %v: want outages in order and apart, with a positive down time (and wake time for a pause)", i, o.At)
		}
		free = o.At + max(o.Down, o.Wake)
	}
	// The regions derate for a drift of up to 500 ppm (their MaxDrift):
	// a clock beyond that is a misconfiguration, not a fault the protocol
	// promises to survive.
	for r, cl := range s.Clocks {
		if !known(r) || math.Abs(cl.Drift) > maxDrift {
			return bad("clocks[%q]: want a known region and a drift within ±500 ppm", r)
		}
	}
	for i, cl := range s.CoordClocks {
		if math.Abs(cl.Drift) > maxDrift {
			return bad("coordinator clocks[%d]: want a drift within ±500 ppm", i)
		}
	}
	for r, l := range s.Links {
		if !known(r) || l.Delay < 0 || l.Jitter < 0 || l.Loss < 0 || l.Loss >= 1 || l.Dup < 0 || l.Dup > 1 {
			return bad("links[%q]: want a known region, delays ≥ 0, loss in [0, 1) and dup in [0, 1]", r)
		}
	}
	return s.validateSkews(c)
}
