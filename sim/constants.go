package sim

// The calibration of the model: illustrative values for a mid-sized web
// service, as the specification's table gives them. Real sites measure
// every one of these on their own hardware and data; docs/model.md lists
// each with its source.
const (
	workersPerInstance = 16

	appTime      = 0.050 // seconds of CPU per request
	heavyAppTime = 0.020 // extra seconds with the heavy feature on
	queries      = 2     // database queries per request
	heavyQueries = 1     // extra queries with the heavy feature on

	dbCapacity     = 4000.0 // queries per second
	hotObjects     = 20000.0
	baseQueryTime  = 0.005 // seconds
	queryTimeCap   = 0.250 // seconds
	refillMinutes  = 30.0  // cache refill time constant τ
	warmupStep     = 0.12  // warm fraction added per minute by the warm-up job
	warmupMinutes  = 6
	warmupQueries  = 600.0 // extra DB queries per second while warming
	clientTimeout  = 2.0   // seconds
	lowPriority    = 0.30  // share of traffic that can be shed
	badBuildErrors = 0.05  // extra error rate on the bad build's traffic
	badBuildCPU    = 0.25  // the bad build needs ×1.25 the app time

	rolloutStep     = 0.25 // share of traffic moved per minute by a rollout
	rollbackMinutes = 5
	pricePerHour    = 0.40 // dollars per instance-hour, booting or serving

	scaleInQuiet    = 10  // quiet minutes before a scale-in
	scaleInFraction = 0.2 // at most this share of the fleet per scale-in
	MaxFleet        = 40  // instances, booting ones included

	errorBudget   = 0.001 // 1 − SLO for a 99.9 % objective
	monthMinutes  = 43200 // 30 days: burn/43,200 of the budget goes per minute
	pageBurn      = 14.4  // fast-burn page threshold for both windows
	longWindow    = 60    // minutes
	shortWindow   = 5     // minutes
	dailySwing    = 0.25  // amplitude of the daily curve
	peakHour      = 12.0  // the daily curve's maximum
	countNoiseStd = 0.02  // multiplicative noise on the minute's request count

	// autoscaleSlack absorbs floating-point error in ⌈serving×util/target⌉,
	// so that a fleet exactly on target (10 × 0.6/0.6) is not rounded up to
	// one instance more.
	autoscaleSlack = 1e-9
)
