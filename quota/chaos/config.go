package chaos

import (
	"fmt"
	"strings"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/eventlog"
)

// Fault is a kind of fault the harness injects.
type Fault uint8

const (
	// Shift moves traffic between regions, up to all of it into one.
	Shift Fault = 1 << iota
	// Partition cuts a region off from the coordinator for a while.
	Partition
	// Crash stops the coordinator: either it dies and a successor
	// restarts from the ledger, or it pauses, a successor takes over, and
	// the old one wakes up still believing it leads.
	Crash
	// Skew gives every node its own clock: an offset of up to ±500 ms and
	// a drift of up to the regions' MaxDrift.
	Skew
	// Dup duplicates messages (and reorders them with jittered delays).
	Dup
)

// AllFaults is every fault.
const AllFaults = Shift | Partition | Crash | Skew | Dup

var faultNames = []struct {
	f    Fault
	name string
}{{Shift, "shift"}, {Partition, "partition"}, {Crash, "crash"}, {Skew, "skew"}, {Dup, "dup"}}

// ParseFaults reads a comma-separated list: shift, partition, crash,
// skew, dup; "all" or "none".
func ParseFaults(s string) (Fault, error) {
	switch strings.TrimSpace(s) {
	case "all":
		return AllFaults, nil
	case "none", "":
		return 0, nil
	}
	var f Fault
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		found := false
		for _, n := range faultNames {
			if n.name == part {
				f |= n.f
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("%w: fault %q: want some of shift, partition, crash, skew, dup (or all, none)", quota.ErrConfig, part)
		}
	}
	return f, nil
}

func (f Fault) String() string {
	var names []string
	for _, n := range faultNames {
		if f&n.f != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// Config is one chaos run. The zero value of each optional field takes
// the default given with it: the seed's tenant — R = 500/s (30,000 a
// minute), B = 6,000, three regions — for ten minutes with every fault.
type Config struct {
	Seed     uint32
	Mode     quota.Mode
	Duration time.Duration // default 10 min
	Faults   Fault         // default AllFaults; set NoFaults for none
	NoFaults bool
	// Tenant overrides the seed's tenant; its Mode and Emergency follow
	// Mode when left zero (E = 100 tokens per region in best-effort mode).
	Tenant quota.Tenant
	// Schedule, if set, replaces the schedule the seed would draw:
	// traffic, faults, clocks and network, scripted.
	Schedule *Schedule
	// Log, if set, receives the event log as it happens.
	Log eventlog.Writer
	// NoCaches runs the regions' limiters without their token cache, every
	// request taking from the shared word (region.Config.Caches −1). By
	// default each has one cache, as a single P of a real region would:
	// one, not one per P, so that a run depends on its seed alone.
	NoCaches bool
	// Sample, if set, logs a sample event per region a nanosecond before
	// each multiple of Sample of virtual time: the lease it spends under
	// and its balance at the end of that step (the console's quota lab
	// draws them; Timeline reads them). Reading the state changes nothing:
	// the run is the same with or without samples.
	Sample time.Duration
	// Duplicate, if set, names a region that runs two agents — two
	// limiters under one region name, as a surged rolling update or
	// replicas: 2 would — each offered the region's traffic. Every region
	// then attaches before it renews, as agents do over the network, and
	// renews as the incarnation it was given; the coordinator lets one
	// agent per region spend at a time. Without it regions renew as
	// in-process callers (incarnation 0) and never attach, and a seed's
	// run is what it always was.
	Duplicate string
}

// Defaults of the seed's tenant.
const (
	DefaultRate      = 500 * quota.One
	DefaultBurst     = 6000 * quota.One
	DefaultEmergency = 100 * quota.One
	DefaultDuration  = 10 * time.Minute
)

// The range of Config.Duration (zero takes DefaultDuration).
const (
	MinDuration = time.Second
	MaxDuration = 24 * time.Hour
)

// DefaultRegions are the seed's three regions.
var DefaultRegions = []string{"eu", "us", "ap"}

func (c Config) withDefaults() Config {
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Faults == 0 && !c.NoFaults {
		c.Faults = AllFaults
	}
	if c.NoFaults {
		c.Faults = 0
	}
	t := c.Tenant
	if t.Name == "" {
		t.Name = "acme"
	}
	if t.Rate == 0 {
		t.Rate = DefaultRate
	}
	if t.Burst == 0 {
		t.Burst = DefaultBurst
	}
	if len(t.Regions) == 0 {
		t.Regions = DefaultRegions
	}
	t.Mode = c.Mode
	if c.Mode == quota.BestEffort && t.Emergency == 0 {
		t.Emergency = DefaultEmergency
	}
	c.Tenant = t.WithDefaults()
	return c
}

// Validate reports the first field out of range.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.Duration < MinDuration || c.Duration > MaxDuration {
		return fmt.Errorf("%w: duration %v: want %v to 24h", quota.ErrConfig, c.Duration, MinDuration)
	}
	if c.Faults&^AllFaults != 0 {
		return fmt.Errorf("%w: faults %d: want some of shift, partition, crash, skew, dup", quota.ErrConfig, c.Faults)
	}
	if c.Sample != 0 && (c.Sample < time.Millisecond || c.Sample > c.Duration) {
		return fmt.Errorf("%w: sample %v: want 0 (none) or 1ms to the run's length", quota.ErrConfig, c.Sample)
	}
	if err := c.Tenant.Validate(); err != nil {
		return err
	}
	if c.Duplicate != "" && !c.Tenant.HasRegion(c.Duplicate) {
		return fmt.Errorf("%w: duplicate %q: want one of the tenant's regions %v", quota.ErrConfig, c.Duplicate, c.Tenant.Regions)
	}
	if c.Schedule != nil {
		return c.Schedule.validate(c)
	}
	return nil
}
