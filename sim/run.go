package sim

import (
	"errors"
	"fmt"
)

// MaxMinutes is the longest run: a week of simulated minutes.
const MaxMinutes = 7 * 24 * 60

// Config describes a whole run. A run is a pure function of its Config:
// the same Config gives the same frames, byte for byte.
//
// The zero value is not valid: Scenario must name a built-in scenario.
// Minutes = 0 means the scenario's own length; Noise = false is the
// noise-free mode, in which the request count is exactly 60λ.
type Config struct {
	Scenario string
	Seed     uint32
	Minutes  int
	Noise    bool
	Actions  []Action // in any order; applied by minute, in the given order within a minute
}

// Length validates the scenario and the length of the run, and returns the
// number of minutes the run will have.
func (c Config) Length() (int, error) {
	sc, err := Lookup(c.Scenario)
	if err != nil {
		return 0, err
	}
	if c.Minutes < 0 || c.Minutes > MaxMinutes {
		return 0, &ConfigError{Field: "minutes", Msg: fmt.Sprintf("%d: want an integer from 1 to %d (0 for the scenario's %d)",
			c.Minutes, MaxMinutes, sc.Minutes)}
	}
	if c.Minutes == 0 {
		return sc.Minutes, nil
	}
	return c.Minutes, nil
}

// Validate checks the whole configuration, actions included, without
// running it.
func (c Config) Validate() error {
	minutes, err := c.Length()
	if err != nil {
		return err
	}
	if len(c.Actions) > MaxActions {
		return fmt.Errorf("%w: %d actions: want at most %d", ErrInvalidAction, len(c.Actions), MaxActions)
	}
	var errs []error
	for i, a := range c.Actions {
		if err := a.Validate(minutes); err != nil {
			errs = append(errs, indexed(err, i))
			if len(errs) == maxReported {
				break
			}
		}
	}
	return errors.Join(errs...)
}

// Run validates the configuration and, if it is valid, simulates every
// minute and returns the frames. An invalid configuration returns an error
// wrapping ErrInvalidConfig or ErrInvalidAction and no frames: nothing is
// half run. Run is safe for concurrent use.
func Run(c Config) ([]Frame, error) {
	minutes, err := c.Length()
	if err != nil {
		return nil, err
	}
	return Play(c, minutes)
}

// Play is Run stopped early: it validates the whole configuration, then
// simulates minutes 0 to upTo−1 only, which is all a player who has seen
// upTo minutes needs. upTo must be between 0 and the run's length.
func Play(c Config, upTo int) ([]Frame, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	sc, _ := Lookup(c.Scenario)
	minutes, _ := c.Length()
	if upTo < 0 || upTo > minutes {
		return nil, &ConfigError{Field: "upTo", Msg: fmt.Sprintf("%d: want an integer from 0 to %d", upTo, minutes)}
	}
	actions := append([]Action(nil), c.Actions...)
	sortActions(actions)

	s, err := New(sc, c.Seed, c.Noise)
	if err != nil {
		return nil, err
	}
	frames := make([]Frame, 0, upTo)
	for m := 0; m < upTo; m++ {
		n := 0
		for n < len(actions) && actions[n].Minute == m {
			n++
		}
		f, err := s.Step(actions[:n])
		if err != nil {
			return nil, err // cannot happen: Validate checked every action
		}
		frames = append(frames, f)
		actions = actions[n:]
	}
	return frames, nil
}
