package settings

import "github.com/afloat/afloat/quota/internal/breakage"

// Limiter is what the options of region.New set.
type Limiter struct {
	// Clock, if not nil, is read instead of the monotonic clock.
	Clock func() int64
	// Faults are deliberate mistakes, for the chaos harness's mutation
	// checks; none by default.
	Faults breakage.Set
}

// Core is what the options of coordinator.New set.
type Core struct {
	// Faults are deliberate mistakes, for the chaos harness's mutation
	// checks; none by default.
	Faults breakage.Set
}
