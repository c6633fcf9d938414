package overload

import (
	"fmt"
	"math"
	"strings"
)

// Profile is a load and a server to put it on. Times are in seconds
// (periods, for the games).
type Profile struct {
	Name        string
	Description string

	Duration float64 // length of a run
	Tick     float64 // arrivals come at the start of each tick
	K        float64 // requests in work at full speed: the server's knee
	Work     float64 // nominal time inside of one request
	WorkCV   float64 // coefficient of variation of the work; 0 for fixed
	Timeout  float64 // clients give up after this long; +Inf for never
	Alpha    float64 // non-linear slowdown (Server.Alpha); 0 for linear

	// Rate is the mean arrival rate, requests per second, at time t. With
	// EveryTick set, exactly Rate(t)·Tick requests arrive each tick (rounded);
	// otherwise the count is Poisson.
	Rate      func(t float64) float64
	EveryTick bool

	// PeakEnd is when the load's largest peak is over: recovery is measured
	// from there. 0 for none.
	PeakEnd float64
	// PeakStart is when that peak begins; the collapse of useful throughput
	// is measured from there.
	PeakStart float64
}

// World Cup day, compressed into three hours: the usual smooth curve plus
// three peaks — fans order before kick-off; at half-time they order about
// three times as much as before kick-off; a third peak at the final
// whistle. The server holds 100 requests in work at full speed (nominal 1 s
// each, so concurrency equals requests per second in the steady state).
const (
	wcK        = 100.0
	wcKickoff  = 30 * 60.0
	wcHalftime = 80 * 60.0
	wcWhistle  = 130 * 60.0
	wcPeak1    = 0.4 * wcK // extra requests per second at the kick-off peak
	wcWidth    = 90.0      // seconds: the standard deviation of a peak
)

func bump(t, at, height, width float64) float64 {
	d := (t - at) / width
	return height * math.Exp(-d*d/2)
}

func worldCupRate(t float64) float64 {
	// The daily curve: from 45 % to 65 % of capacity over the three hours.
	base := wcK * (0.55 - 0.10*math.Cos(math.Pi*t/(3*3600)))
	return base +
		bump(t, wcKickoff, wcPeak1, wcWidth) +
		bump(t, wcHalftime, 3*wcPeak1, wcWidth) +
		bump(t, wcWhistle, 1.5*wcPeak1, wcWidth)
}

var profiles = []Profile{
	{
		Name: "worldcup",
		Description: "World Cup day in three hours: a smooth daily curve with peaks at kick-off, half-time (three times " +
			"the first) and the final whistle, on a server that holds 100 requests in work at full speed (1 s each) " +
			"and loses efficiency above that",
		Duration: 3 * 3600, Tick: 0.01, K: wcK, Work: 1, Timeout: 10, Alpha: 0.5,
		Rate:      worldCupRate,
		PeakStart: wcHalftime - 3*wcWidth, PeakEnd: wcHalftime + 3*wcWidth,
	},
	{
		Name:        "game1",
		Description: "the seed's game 1: two CPUs, 3 units of work a request, one request a period (150 % of capacity), no limit",
		Duration:    60, Tick: 1, K: 2, Work: 3, Timeout: math.Inf(1),
		Rate:      func(float64) float64 { return 1 },
		EveryTick: true,
	},
	{
		Name:        "game2",
		Description: "the seed's game 2, the bouncer: game 1's load with 2 inside and a queue of 2 (run it with --inside 2 --outside 2)",
		Duration:    60, Tick: 1, K: 2, Work: 3, Timeout: math.Inf(1),
		Rate:      func(float64) float64 { return 1 },
		EveryTick: true,
	},
	{
		Name:        "overload2x",
		Description: "1,000 requests per second for 10 minutes on a server whose knee is 50 requests in work (100 ms each): twice its capacity, for the adaptive limit",
		Duration:    600, Tick: 0.001, K: 50, Work: 0.1, WorkCV: 0.3, Timeout: 2, Alpha: 0.5,
		Rate: func(float64) float64 { return 1000 },
	},
	{
		Name:        "healthy",
		Description: "300 requests per second for 10 minutes on the same server: 60 % of its capacity",
		Duration:    600, Tick: 0.001, K: 50, Work: 0.1, WorkCV: 0.3, Timeout: 2, Alpha: 0.5,
		Rate: func(float64) float64 { return 300 },
	},
}

// Profiles returns the built-in profiles.
func Profiles() []Profile { return append([]Profile(nil), profiles...) }

// ProfileNames lists them.
func ProfileNames() []string {
	var n []string
	for _, p := range profiles {
		n = append(n, p.Name)
	}
	return n
}

// LookupProfile returns the profile with this name.
func LookupProfile(name string) (Profile, error) {
	for _, p := range profiles {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("%w: profile %q: want one of %s", ErrConfig, name, strings.Join(ProfileNames(), ", "))
}
