package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/afloat/afloat/sim"
)

// Pulled is what POST /lever answers: the action as recorded, with the
// simulated minute it takes effect, that minute's time of day and when it
// starts on the wall clock.
type Pulled struct {
	Action sim.Action `json:"action"`
	Clock  string     `json:"clock"`
	At     time.Time  `json:"takes_effect_at"`
}

// remoteError is a drill's refusal, as its answer words it, matching the
// sentinel its status means.
type remoteError struct {
	sentinel error
	msg      string
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

// LeverBody returns the JSON body of a lever given as on a command line:
// the control's name as sim names it (fleet_floor) or with hyphens
// (fleet-floor), and its value as typed — "" for a button, true or false
// for a switch, a number — which the drill checks.
func LeverBody(name, value string) []byte {
	body := map[string]json.RawMessage{}
	control, _ := json.Marshal(strings.ReplaceAll(name, "-", "_"))
	body["control"] = control
	if value != "" {
		raw := json.RawMessage(value)
		if _, err := strconv.ParseFloat(value, 64); (err != nil || !json.Valid(raw)) && value != "true" && value != "false" {
			// Not a JSON number or boolean: sent as a string, which the
			// drill refuses naming the values the control takes.
			raw, _ = json.Marshal(value)
		}
		body["value"] = raw
	}
	b, _ := json.Marshal(body)
	return b
}

// PullLever pulls a lever of the drill at base (http://host:port) with
// the token: POST /lever with LeverBody(name, value). A refusal is
// returned in the drill's words, matching ErrInvalidLever, ErrEnded or
// ErrUnauthorized as the drill answered. It is safe for concurrent use.
func PullLever(ctx context.Context, client *http.Client, base, token, name, value string) (Pulled, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/lever", bytes.NewReader(LeverBody(name, value)))
	if err != nil {
		return Pulled{}, fmt.Errorf("drill: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return Pulled{}, fmt.Errorf("drill: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return Pulled{}, fmt.Errorf("drill: reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var refusal apiError
		if json.Unmarshal(body, &refusal) != nil || refusal.Error == "" {
			return Pulled{}, fmt.Errorf("drill: %s answered %s: %.200s", base, resp.Status, body)
		}
		sentinel := map[int]error{
			http.StatusBadRequest:   ErrInvalidLever,
			http.StatusUnauthorized: ErrUnauthorized,
			http.StatusConflict:     ErrEnded,
		}[resp.StatusCode]
		if sentinel == nil {
			return Pulled{}, fmt.Errorf("drill: %s answered %s: %s", base, resp.Status, refusal.Error)
		}
		return Pulled{}, &remoteError{sentinel: sentinel, msg: refusal.Error}
	}
	var p Pulled
	if err := json.Unmarshal(body, &p); err != nil {
		return Pulled{}, fmt.Errorf("drill: %s answered %.200s: %w", base, body, err)
	}
	return p, nil
}

// maxStatus bounds a drill's GET /status answer: its levers are at most
// one a simulated minute, a few hundred bytes each.
const maxStatus = 1 << 20

// ReadStatus reads the status of the drill at base (http://host:port):
// GET /status, checked as a console would replay it — a scenario the model
// knows, the minute within the drill, every lever one the console would
// take at the minute it was recorded. A status that fails a check is
// refused naming the field, wrapping ErrBadStatus. It is safe for
// concurrent use.
func ReadStatus(ctx context.Context, client *http.Client, base string) (Status, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/status", nil)
	if err != nil {
		return Status{}, fmt.Errorf("drill: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return Status{}, fmt.Errorf("drill: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatus+1))
	if err != nil {
		return Status{}, fmt.Errorf("drill: reading %s/status: %w", base, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Status{}, fmt.Errorf("%w: %s/status answered %s: %.200s", ErrBadStatus, base, resp.Status, body)
	}
	if len(body) > maxStatus {
		return Status{}, fmt.Errorf("%w: %s/status: more than %d bytes", ErrBadStatus, base, maxStatus)
	}
	var st Status
	if err := json.Unmarshal(body, &st); err != nil {
		return Status{}, fmt.Errorf("%w: %s/status: %v", ErrBadStatus, base, err)
	}
	if err := st.check(); err != nil {
		return Status{}, fmt.Errorf("%w: %s/status: %v", ErrBadStatus, base, err)
	}
	return st, nil
}

// check says what in a status read over the network no drill would send.
func (st Status) check() error {
	sc, err := sim.Lookup(st.Scenario)
	if err != nil {
		return fmt.Errorf("scenario %q: want one of %s", st.Scenario, strings.Join(sim.ScenarioNames(), ", "))
	}
	if st.Minutes != sc.Minutes {
		return fmt.Errorf("minutes %d: want %d, the length of %s", st.Minutes, sc.Minutes, st.Scenario)
	}
	if st.Minute < 0 || st.Minute > st.Minutes || st.Ended != (st.Minute == st.Minutes) {
		return fmt.Errorf("minute %d (ended %v): want 0 to %d, %d once ended", st.Minute, st.Ended, st.Minutes-1, st.Minutes)
	}
	for i, a := range st.Actions {
		if err := a.Validate(st.Minutes); err != nil {
			return fmt.Errorf("actions[%d]: %v", i, err)
		}
		if a.Minute > st.Minute+1 || (i > 0 && a.Minute < st.Actions[i-1].Minute) {
			return fmt.Errorf("actions[%d]: minute %d: want %d to %d (in the order pulled, at most the next minute)", i, a.Minute, st.Actions[max(i, 1)-1].Minute, st.Minute+1)
		}
	}
	return nil
}

// RunSoFar returns the run a console replays to show the drill as its
// status has it: the scenario, the seed, noise on (as every drill runs)
// and the levers pulled so far.
func (st Status) RunSoFar() sim.Config {
	return sim.Config{Scenario: st.Scenario, Seed: st.Seed, Noise: true, Actions: slices.Clone(st.Actions)}
}
