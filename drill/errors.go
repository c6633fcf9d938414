package drill

import "errors"

// Errors returned by this package. Callers test for them with errors.Is;
// the wrapped message names the field at fault and what it allows.
var (
	// ErrInvalidConfig: a drill's scenario, speed, address or token is
	// not one it can run with.
	ErrInvalidConfig = errors.New("drill: invalid configuration")
	// ErrInvalidLever: a lever names an unknown control or a value out of
	// its range (the console's rules, sim.ActionError's words), or its
	// body is not the JSON a lever is. Nothing was changed.
	ErrInvalidLever = errors.New("drill: invalid lever")
	// ErrEnded: the drill is over, or its last minute is under way, so a
	// lever would take effect after its end. Nothing was changed.
	ErrEnded = errors.New("drill: the drill has ended")
	// ErrNotEnded: the postmortem reveals the incident, so it waits for
	// the drill's end.
	ErrNotEnded = errors.New("drill: the drill is still running")
	// ErrUnauthorized: a request that changes the drill came without the
	// drill's bearer token.
	ErrUnauthorized = errors.New("drill: a valid token is required (Authorization: Bearer TOKEN)")
	// ErrBadStatus: what a drill's GET /status answered (ReadStatus) is
	// not a drill's status: another server, or a status no drill sends.
	ErrBadStatus = errors.New("drill: not a drill's status")
)

// LeverError says what is wrong with a lever: the field at fault
// ("control", "value", "minute", or "" for the body as a whole) and a
// message naming the allowed range. It matches ErrInvalidLever.
type LeverError struct {
	Field string
	Msg   string
}

func (e *LeverError) Error() string {
	if e.Field == "" {
		return ErrInvalidLever.Error() + ": " + e.Msg
	}
	return ErrInvalidLever.Error() + ": " + e.Field + ": " + e.Msg
}

// Unwrap makes every LeverError match ErrInvalidLever.
func (e *LeverError) Unwrap() error { return ErrInvalidLever }
