package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
