package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/afloat/afloat/internal/jsonnum"
	"github.com/afloat/afloat/overload"
	"github.com/afloat/afloat/sim"
	"github.com/afloat/afloat/sim/bots"
)

// maxFrames bounds the frames one response carries: a day of minutes.
const maxFrames = 1440

// api serves the console's JSON endpoints. It holds no state between
// requests.
type api struct {
	maxBody int64
	logger  *slog.Logger
	game    *game
}

// apiError is a refused request: the status, the field at fault (a query
// parameter or JSON field, "" when it is the request as a whole) and a
// message that names the allowed range.
type apiError struct {
	status int
	field  string
	msg    string
}

func badRequest(field, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, field: field, msg: fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, field, msg string) {
	body := map[string]string{"error": msg}
	if field != "" {
		body["field"] = field
	}
	writeJSON(w, status, body)
}

func (e *apiError) write(w http.ResponseWriter) { writeError(w, e.status, e.field, e.msg) }

// request is what the run endpoints read, from a query string (GET, the
// share-link form) or a JSON body (POST).
type request struct {
	cfg    sim.Config
	sc     sim.Scenario
	length int // minutes in the run

	from, to int  // /api/run: frames [from, to)
	hints    bool // /api/run: the runbook's advice too
	at       int  // /api/debrief: minutes played
	coach    bool // POST /api/debrief: grade, par and what-ifs too
	minute   int  // /api/explain: the minute explained
	bot      string
}

// extra names the parameters an endpoint takes beyond the run itself.
type extra []string

var (
	runExtras     = extra{"from", "to", "hints"}
	debriefExtras = extra{"at", "coach"}
	explainExtras = extra{"minute"}
)

var runFields = []string{sim.QueryScenario, sim.QuerySeed, sim.QueryNoise, sim.QueryMinutes, sim.QueryActions}

func (x extra) allowed() string {
	return strings.Join(append(append([]string(nil), runFields...), x...), ", ")
}

func (a *api) decode(r *http.Request, x extra) (request, *apiError) {
	var (
		req    request
		extras map[string]json.RawMessage
		apiErr *apiError
	)
	if r.Method == http.MethodPost {
		req.cfg, extras, apiErr = a.decodeBody(r, x)
	} else {
		var q url.Values
		if q, apiErr = parseQuery(r.URL.RawQuery); apiErr == nil {
			req.cfg, extras, apiErr = decodeQuery(q, x)
		}
	}
	if apiErr != nil {
		return request{}, apiErr
	}
	if err := req.cfg.Validate(); err != nil {
		return request{}, simError(err)
	}
	req.sc, _ = sim.Lookup(req.cfg.Scenario)
	req.length, _ = req.cfg.Length()

	var err *apiError
	intParam := func(name string, def, lo, hi int) int {
		raw, ok := extras[name]
		if !ok || err != nil {
			return def
		}
		v, e := parseInt(raw)
		if e != nil || v < int64(lo) || v > int64(hi) {
			err = badRequest(name, "%s %s: want an integer from %d to %d", name, clip(raw), lo, hi)
		}
		return int(v)
	}
	req.from = intParam("from", 0, 0, req.length)
	req.to = intParam("to", req.length, req.from, req.length)
	req.at = intParam("at", req.length, 1, req.length)
	req.minute = intParam("minute", 0, 0, req.length-1)
	if err != nil {
		return request{}, err
	}
	for name, dst := range map[string]*bool{"hints": &req.hints, "coach": &req.coach} {
		if raw, ok := extras[name]; ok {
			v, ok := boolParam(raw)
			if !ok {
				return request{}, badRequest(name, "%s %s: want true or false", name, clip(raw))
			}
			*dst = v
		}
	}
	if raw, ok := extras["bot"]; ok && unmarshal(raw, &req.bot) != nil {
		return request{}, badRequest("bot", "bot %s: want a string, one of %s", clip(raw), strings.Join(bots.Names(), ", "))
	}
	if slices.Contains(x, "to") && req.to-req.from > maxFrames {
		return request{}, badRequest("to", "from %d to %d is %d frames: want at most %d per request", req.from, req.to, req.to-req.from, maxFrames)
	}
	return req, nil
}

// decodeQuery reads a run from a query string, the form share links use,
// as parseQuery split it.
func decodeQuery(q url.Values, x extra) (sim.Config, map[string]json.RawMessage, *apiError) {
	for key := range q {
		if !slices.Contains(runFields, key) && !slices.Contains(x, key) {
			return sim.Config{}, nil, badRequest(clipKey(key), "unknown parameter %q: this endpoint takes %s", clip(json.RawMessage(key)), x.allowed())
		}
	}
	cfg, err := sim.ParseQuery(q)
	if err != nil {
		return sim.Config{}, nil, simError(err)
	}
	if _, ok := q[sim.QueryMinutes]; ok && cfg.Minutes == 0 {
		// The share codec reads minutes=0 as the scenario's length (and
		// never writes it); the API takes a length or nothing.
		return sim.Config{}, nil, badRequest(sim.QueryMinutes, "minutes %q: want an integer from 1 to %d (leave it out for the scenario's length)", clip([]byte(q.Get(sim.QueryMinutes))), sim.MaxMinutes)
	}
	extras := map[string]json.RawMessage{}
	for _, key := range x {
		if vs, ok := q[key]; ok {
			extras[key] = json.RawMessage(vs[0]) // parseQuery refused a second one
		}
	}
	return cfg, extras, nil
}

// decodeBody reads a run from a JSON body:
//
//	{"scenario": "bad-deploy", "seed": 7, "noise": true, "minutes": 120,
//	 "actions": [{"minute": 28, "control": "rollback"}], "from": 0, "to": 30}
func (a *api) decodeBody(r *http.Request, x extra) (sim.Config, map[string]json.RawMessage, *apiError) {
	body, apiErr := readBody(r, a.maxBody)
	if apiErr != nil {
		return sim.Config{}, nil, apiErr
	}
	fields, apiErr := decodeObject(body, `{"scenario": "steady", "seed": 1}`, nil)
	if apiErr != nil {
		return sim.Config{}, nil, apiErr
	}
	var cfg sim.Config
	cfg.Noise = true
	extras := map[string]json.RawMessage{}
	for key, raw := range fields {
		switch {
		case key == "scenario":
			if unmarshal(raw, &cfg.Scenario) != nil {
				return sim.Config{}, nil, badRequest(key, "scenario %s: want a string, one of %s", clip(raw), strings.Join(sim.ScenarioNames(), ", "))
			}
		case key == "seed":
			v, err := parseInt(raw)
			if err != nil || v < 0 || v > math.MaxUint32 {
				return sim.Config{}, nil, badRequest(key, "seed %s: want an integer from 0 to %d", clip(raw), uint32(math.MaxUint32))
			}
			cfg.Seed = uint32(v)
		case key == "noise":
			if unmarshal(raw, &cfg.Noise) != nil {
				return sim.Config{}, nil, badRequest(key, "noise %s: want true or false", clip(raw))
			}
		case key == "minutes":
			// Zero is not a length: leaving minutes out gives the
			// scenario's, rather than a 0 that would mean it silently.
			v, err := parseInt(raw)
			if err != nil || v < 1 || v > sim.MaxMinutes {
				return sim.Config{}, nil, badRequest(key, "minutes %s: want an integer from 1 to %d (leave it out for the scenario's length)", clip(raw), sim.MaxMinutes)
			}
			cfg.Minutes = int(v)
		case key == "actions":
			var items []json.RawMessage
			if unmarshal(raw, &items) != nil {
				return sim.Config{}, nil, badRequest(key, "want an array of actions like {\"minute\": 28, \"control\": \"rollback\"}")
			}
			if len(items) > sim.MaxActions {
				return sim.Config{}, nil, badRequest(key, "%d actions: want at most %d", len(items), sim.MaxActions)
			}
			cfg.Actions = make([]sim.Action, len(items))
			for i, item := range items {
				if err := cfg.Actions[i].UnmarshalJSON(item); err != nil {
					var ae *sim.ActionError
					if errors.As(err, &ae) {
						ae.Index = i
					}
					return sim.Config{}, nil, simError(err)
				}
			}
		case slices.Contains(x, key):
			extras[key] = raw
		default:
			return sim.Config{}, nil, badRequest(clipKey(key), "unknown field %q: this endpoint takes %s", clip(json.RawMessage(key)), x.allowed())
		}
	}
	if _, ok := fields["scenario"]; !ok {
		return sim.Config{}, nil, badRequest("scenario", "scenario missing: want one of %s", strings.Join(sim.ScenarioNames(), ", "))
	}
	return cfg, extras, nil
}

// parseInt reads a JSON number or a query value that must be a whole
// number, in JSON's grammar and exactly: 1e3 is 1000, while null, 1.5,
// 1e-400 (which a float reads as 0), "+1" and 0x10 are refused.
func parseInt(raw json.RawMessage) (int64, error) {
	return jsonnum.Int(raw)
}

// clip shortens what a client sent before it is quoted back.
func clip(b json.RawMessage) string {
	s := string(b)
	if r := []rune(s); len(r) > 40 {
		s = string(r[:40]) + "…"
	}
	return strconv.Quote(s)[1 : len(strconv.Quote(s))-1]
}

// simError turns the model's validation error into a 400 naming the field.
func simError(err error) *apiError {
	return badRequest(sim.ErrorField(err), "%s", err.Error())
}

// scenarioInfo is a scenario as the console lists it.
type scenarioInfo struct {
	Name      string       `json:"name"`
	Title     string       `json:"title"`
	Briefing  string       `json:"briefing"`
	Start     string       `json:"start"`
	Minutes   int          `json:"minutes"`
	BootDelay int          `json:"boot_delay_minutes"`
	Budget    float64      `json:"budget_remaining"`
	BaseRate  float64      `json:"base_rate"`
	Serving   int          `json:"serving"`
	Controls  sim.Controls `json:"controls"`
	Deploys   []int        `json:"deploys"` // minutes of scheduled deploys: the dashboards' markers
	Runbook   []string     `json:"runbook"` // the steps of its runbook, catalogue keys
}

// scenarios lists what the console needs to set up a game: scenarios,
// controls, the model's constants and its sources.
func (a *api) scenarios(w http.ResponseWriter, r *http.Request) {
	var list []scenarioInfo
	for _, sc := range sim.Scenarios() {
		deploys := []int{}
		for _, ev := range sc.Events {
			if ev.Kind == sim.EventDeploy {
				deploys = append(deploys, ev.Minute)
			}
		}
		list = append(list, scenarioInfo{
			Name: sc.Name, Title: sc.Title, Briefing: sc.Briefing, Start: sim.Clock(sc.Start),
			Minutes: sc.Minutes, BootDelay: sc.BootDelay, Budget: sc.Budget, BaseRate: sc.BaseRate,
			Serving: sc.Serving, Controls: sc.Controls, Deploys: deploys, Runbook: bots.RunbookSteps(sc.Name),
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"scenarios": list,
		"controls":  sim.ControlSpecs(),
		"constants": sim.Constants(),
		"sources":   sim.Sources(),

		"lab_profiles": overload.ProfileNames(),
		"lab_patience": labPatienceRanges(),
		"lab_games":    overload.GameNames,
	})
}

// runResponse carries frames [From, To) of a run.
type runResponse struct {
	Scenario string      `json:"scenario"`
	Seed     uint32      `json:"seed"`
	Noise    bool        `json:"noise"`
	Minutes  int         `json:"minutes"` // the run's length
	Start    string      `json:"start"`
	From     int         `json:"from"`
	To       int         `json:"to"`
	Share    string      `json:"share"` // the run as a query string
	Frames   []sim.Frame `json:"frames"`
	Hints    *[]hint     `json:"hints,omitempty"` // with hints: the runbook's advice after each minute
}

// play decodes a run request and simulates it up to the minute upTo
// chooses; on a refusal it answers the client and returns false.
func (a *api) play(w http.ResponseWriter, r *http.Request, x extra, upTo func(request) int) (request, []sim.Frame, bool) {
	req, apiErr := a.decode(r, x)
	if apiErr != nil {
		apiErr.write(w)
		return request{}, nil, false
	}
	frames, err := sim.Play(req.cfg, upTo(req))
	if err != nil {
		simError(err).write(w)
		return request{}, nil, false
	}
	return req, frames, true
}

func (a *api) run(w http.ResponseWriter, r *http.Request) {
	req, frames, ok := a.play(w, r, runExtras, func(req request) int { return req.to })
	if !ok {
		return
	}
	out := runResponse{
		Scenario: req.cfg.Scenario, Seed: req.cfg.Seed, Noise: req.cfg.Noise,
		Minutes: req.length, Start: sim.Clock(req.sc.Start), From: req.from, To: req.to,
		Share: req.cfg.Query().Encode(), Frames: frames[req.from:],
	}
	if req.hints {
		h := hints(req, frames)
		out.Hints = &h
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) debrief(w http.ResponseWriter, r *http.Request) {
	req, frames, ok := a.play(w, r, debriefExtras, func(req request) int { return req.at })
	if !ok {
		return
	}
	if req.coach && r.Method != http.MethodPost {
		writeError(w, http.StatusBadRequest, "coach", "coach: the coach searches for up to a second, so it is POST only; send the run as a JSON body with \"coach\": true")
		return
	}
	if req.coach && req.at != req.length {
		writeError(w, http.StatusBadRequest, "coach", fmt.Sprintf("coach: the coach looks at a whole run: at must be the run's length, %d", req.length))
		return
	}
	score := sim.ScoreFrames(req.sc, frames)
	out := map[string]any{"debrief": sim.Summarize(req.sc, frames, req.cfg.Actions), "score": score}
	if p := percentiles(req, score); p != nil {
		out["percentiles"] = p
	}
	if req.coach {
		c, err := a.coach(r.Context(), req, score)
		if err != nil {
			busy(w, r, err)
			return
		}
		out["coach"] = c
	}
	// The surge and a mystery's morning are the scenario's secrets: they
	// are told only once the run is over, with the incidents and the
	// minute the dashboard first showed each.
	if req.at == req.length {
		if s, err := sim.New(req.sc, req.cfg.Seed, req.cfg.Noise); err == nil {
			if surge, ok := s.Surge(); ok {
				out["surge"] = surge
			}
			if morning, ok := s.Morning(); ok {
				out["morning"] = morning
				if found, err := bots.Diagnose(req.cfg, frames); err == nil {
					out["incidents"] = found
				}
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) explain(w http.ResponseWriter, r *http.Request) {
	req, frames, ok := a.play(w, r, explainExtras, func(req request) int { return req.minute + 1 })
	if !ok {
		return
	}
	f := frames[req.minute]
	writeJSON(w, http.StatusOK, map[string]any{
		"minute":   f.Minute,
		"clock":    f.Clock,
		"formulas": sim.Explain(req.sc, f),
	})
}
