package sim

import "errors"

// Errors returned by this package. Callers test for them with errors.Is;
// the wrapped message names the field at fault and the allowed range.
var (
	// ErrInvalidAction: an action names an unknown control, has a value of
	// the wrong type or out of range, or falls outside the run.
	ErrInvalidAction = errors.New("sim: invalid action")
	// ErrInvalidConfig: a run's scenario, length or format is not one the
	// model knows.
	ErrInvalidConfig = errors.New("sim: invalid run configuration")
)
