package sim

import (
	"errors"
	"fmt"
)

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

// ConfigError names the field of a run's configuration that is refused and
// says what it allows. It matches ErrInvalidConfig.
type ConfigError struct {
	Field string // "scenario", "seed", "noise", "minutes", "format", …
	Msg   string // the value refused and the allowed range
}

func (e *ConfigError) Error() string {
	return ErrInvalidConfig.Error() + ": " + e.Field + " " + e.Msg
}

// Unwrap makes every ConfigError match ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// ErrorField names the input at fault in an error from this package, the
// way the console's API and share links name it: the configuration's
// field ("scenario", "seed", "minutes", …), "actions" for the action list
// as a whole, or "actions[3].value" for a field of the fourth action
// ("actions[3]" when the action as a whole is malformed). It returns ""
// for an error that names no field. Joined errors name their first.
func ErrorField(err error) string {
	var ce *ConfigError
	var ae *ActionError
	switch {
	case errors.As(err, &ce):
		return ce.Field
	case errors.As(err, &ae):
		if ae.Field == QueryActions {
			return QueryActions
		}
		field := fmt.Sprintf("actions[%d]", ae.Index)
		if ae.Field != "" {
			field += "." + ae.Field
		}
		return field
	}
	return ""
}
