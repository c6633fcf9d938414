package overload

import (
	"fmt"
	"math"
	"strings"
)

// Profile is a load and a server to put it on. Times are in seconds.
type Profile struct {
	Name        string
	Description string

	Duration float64 // length of a run
	Tick     float64 // arrivals come at the start of each tick
	K        float64 // requests in work at full speed: the server's knee
	Work     float64 // nominal time inside of one request
	WorkCV   float64 // coefficient of variation of the work; 0 for fixed
	Timeout  float64 // clients give up after this long; +Inf for never
	// MaxPatience, when above Timeout, makes clients differ: each try
	// gives up after a time drawn log-uniformly between Timeout and
	// MaxPatience. 0 for all alike.
	MaxPatience float64
	// Retries is how many times a client that gave up sends its request
	// again, at once; a client the bulkhead refuses goes home.
	Retries int

	// Rate is the mean arrival rate of first tries, requests per second,
	// at time t. The count of a tick is Poisson, or with EveryTick exactly
	// Rate(t)·Tick, rounded.
	Rate      func(t float64) float64
	EveryTick bool

	// PeakStart and PeakEnd bound the load's largest peak: the collapse of
	// useful throughput is measured from its start, recovery from its end,
	// and the state "after the peak" from its end to AfterEnd. 0 for none.
	PeakStart, PeakEnd, AfterEnd float64

	// The database scenario. Conns is how many requests the server (there,
	// the database) holds at once — its connections; one more is refused at
	// once. 0 for no such limit. Other is the load of a second client of
	// the same server (another service on the same database), whose
	// requests give up after OtherTimeout and are never retried. Threads is
	// the thread pool of the comparison's synchronous run.
	Conns        int
	Other        func(t float64) float64
	OtherTimeout float64
	Threads      int

	// Inside and Outside are the limits a comparison uses when it is given
	// none: the knee and as many again outside.
	Inside, Outside int
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

func worldCupRate(t float64) float64 { return worldCupWith(3 * wcPeak1)(t) }

// worldCupWith is the World Cup day with a half-time peak of this height,
// for the calibration's sweep.
func worldCupWith(halftime float64) func(float64) float64 {
	return func(t float64) float64 {
		// The daily curve: from 45 % to 65 % of capacity over the three hours.
		base := wcK * (0.55 - 0.10*math.Cos(math.Pi*t/(3*3600)))
		return base +
			bump(t, wcKickoff, wcPeak1, wcWidth) +
			bump(t, wcHalftime, halftime, wcWidth) +
			bump(t, wcWhistle, 1.5*wcPeak1, wcWidth)
	}
}

// The database scenario: a service whose requests are one query each to a
// database that runs 20 queries at full speed (50 ms each, 400 a second)
// and slows down linearly above that, with 200 connections. The service
// takes 200 requests a second, and five times in ten minutes a click storm
// (or a GC pause, or a proxy that queued them) brings 300 more at once.
// Another service sends the same database 100 queries a second, whose
// callers give up after half a second.
//
// It is scaled from the article's numbers, which fix no time per query:
// a pool of 20 threads and 20 connections, 20 requests a second, a peak of
// 200 in the system at once, and a database that would need 200
// connections. The 50 ms query, the tenfold load (half the database's
// capacity, so that a burst is what hurts), bursts of 300 (more than the
// 200 connections), the hard refusal once all 200 are in use (the
// article's database only slows down) and the second service (the
// article's "another server on the same database", from its story of the
// sudden death) are afloat's.
const (
	dbBurst      = 300.0 // requests in a burst
	dbBurstWidth = 0.05  // seconds: the standard deviation of a burst
)

func databaseRate(t float64) float64 {
	r := 200.0
	for _, at := range []float64{60, 180, 300, 420, 540} {
		r += bump(t, at, dbBurst/(dbBurstWidth*math.Sqrt(2*math.Pi)), dbBurstWidth)
	}
	return r
}

var profiles = []Profile{
	{
		Name: "worldcup",
		Description: "World Cup day in three hours: a smooth daily curve with peaks at kick-off, half-time (three times " +
			"the first) and the final whistle, on a server that holds 100 requests in work at full speed (1 s each); " +
			"clients — call-centre operators with a customer on the line — give up after 10 s to 20 min and try once more " +
			"(afloat's hypothesis for the death the article shows, which names no mechanism)",
		Duration: 3 * 3600, Tick: 0.01, K: wcK, Work: 1, Timeout: 10, MaxPatience: 20 * 60, Retries: 1,
		Rate:      worldCupRate,
		PeakStart: wcHalftime - 3*wcWidth, PeakEnd: wcHalftime + 3*wcWidth, AfterEnd: wcWhistle - 3*wcWidth,
		Inside: 100, Outside: 100,
	},
	{
		Name: "database",
		Description: "the seed's asynchronous server, scaled from the article's pool of 20, 20 requests a second and 200 " +
			"in the system at once: a service of 200 requests a second, one query each to a database that runs 20 queries " +
			"at full speed (50 ms), with bursts of 300 requests at once; afloat adds a refusal once all 200 connections " +
			"are in use, and another service that sends the same database 100 queries a second and gives up after 0.5 s",
		Duration: 600, Tick: 0.001, K: 20, Work: 0.05, Timeout: 5, Retries: 1,
		Rate:  databaseRate,
		Conns: 200, Other: func(float64) float64 { return 100 }, OtherTimeout: 0.5, Threads: 20,
		Inside: 20, Outside: 20,
	},
	{
		Name:        "overload2x",
		Description: "1,000 requests per second for 10 minutes on a server whose knee is 50 requests in work (100 ms each): twice its capacity, for the adaptive limit",
		Duration:    600, Tick: 0.001, K: 50, Work: 0.1, WorkCV: 0.3, Timeout: 2,
		Rate:   func(float64) float64 { return 1000 },
		Inside: 50, Outside: 50,
	},
	{
		Name:        "healthy",
		Description: "300 requests per second for 10 minutes on the same server: 60 % of its capacity",
		Duration:    600, Tick: 0.001, K: 50, Work: 0.1, WorkCV: 0.3, Timeout: 2,
		Rate:   func(float64) float64 { return 300 },
		Inside: 50, Outside: 50,
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
