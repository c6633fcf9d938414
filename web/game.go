package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/afloat/afloat/sim"
	"github.com/afloat/afloat/sim/bots"
)

// The game's costly answers: the hindsight search (perfect foresight; up
// to a second) and the coach's replays (tens of milliseconds), each shared
// per key, capped and cancelled when nobody waits (flights). The policy
// bots (the expert that sets par among them) and the score cost a run or
// two, well under a millisecond, and are computed in the request.
type game struct {
	hindsights *flights[bots.Run]
	coaches    *flights[[]bots.WhatIf]
}

const (
	gameComputing = 2 // experts (and coaches) computing at once: the cores of a small machine
	gameKept      = 64
	gameTimeout   = 30 * time.Second
)

// newGame bounds each computation by gameTimeout, and by half the
// server's write timeout: a request may spend up to the read timeout on
// its body and the queue's wait in the bulkhead before its computation
// starts, and its refusal must still be written before the server's write
// deadline (with the defaults, 15 s + 5 s + 30 s < 60 s). A client whose
// computation ran past its bound reads a 503 saying so, not an empty
// reply.
func newGame(writeTimeout time.Duration) *game {
	bound := gameTimeout
	if writeTimeout > 0 {
		bound = min(bound, writeTimeout/2)
	}
	return &game{
		hindsights: newFlights[bots.Run](gameComputing, gameKept, bound),
		coaches:    newFlights[[]bots.WhatIf](gameComputing, gameKept, bound),
	}
}

// runKey names a run without its actions: what hindsight depends on.
func runKey(c sim.Config) string {
	c.Actions = nil
	return c.Query().Encode()
}

// hindsight returns the perfect-foresight run on the configuration's
// seed, shared.
func (g *game) hindsight(ctx context.Context, c sim.Config) (bots.Run, error) {
	c.Actions = nil
	return g.hindsights.do(ctx, runKey(c), func(ctx context.Context) (bots.Run, error) {
		return bots.Hindsight(ctx, c)
	})
}

// busy answers a refusal from a flight: 503 when the console computes as
// many as it allows (with Retry-After) or when the computation ran past its
// bound (without: asking again would do the same), nothing when the client
// has gone.
func busy(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case r.Context().Err() != nil:
		return // nobody reads an answer
	case errors.Is(err, errBusy):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "", "the console is computing as many hindsight searches and coaches as it can ("+
			strconv.Itoa(gameComputing)+" at a time); try again in 1 s")
	case errors.Is(err, errTooLong):
		writeError(w, http.StatusServiceUnavailable, "", "the hindsight search (or the coach) ran past its bound and was stopped ("+
			err.Error()+"); a shorter run (fewer minutes) is computed sooner")
	default:
		writeError(w, http.StatusServiceUnavailable, "", err.Error())
	}
}

// botAnswer is a bot's run on a seed: its actions (to replay it, in the
// page or a share link) and its score.
type botAnswer struct {
	Bot      string       `json:"bot"`
	Scenario string       `json:"scenario"`
	Seed     uint32       `json:"seed"`
	Noise    bool         `json:"noise"`
	Minutes  int          `json:"minutes"`
	Actions  []sim.Action `json:"actions"`
	Share    string       `json:"share"`
	Score    sim.Score    `json:"score"`
}

func answerOf(bot string, length int, r bots.Run) botAnswer {
	acts := r.Config.Actions
	if acts == nil {
		acts = []sim.Action{}
	}
	return botAnswer{Bot: bot, Scenario: r.Config.Scenario, Seed: r.Config.Seed, Noise: r.Config.Noise, Minutes: length,
		Actions: acts, Share: r.Config.Query().Encode(), Score: r.Score}
}

// bot answers POST /api/bot {"scenario": "surge", "seed": 7, "bot":
// "expert"}: the bot's run on the seed, its actions and score.
func (a *api) bot(w http.ResponseWriter, r *http.Request) {
	req, apiErr := a.decode(r, extra{"bot"})
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	if len(req.cfg.Actions) > 0 {
		writeError(w, http.StatusBadRequest, "actions", "a bot plays the seed from the start: send no actions")
		return
	}
	name := req.bot
	if name == "" {
		writeError(w, http.StatusBadRequest, "bot", "bot missing: want one of "+strings.Join(bots.Names(), ", "))
		return
	}
	var (
		run bots.Run
		err error
	)
	if name == bots.BotHindsight {
		run, err = a.game.hindsight(r.Context(), req.cfg)
	} else {
		run, err = bots.PlayBot(r.Context(), req.cfg, name)
	}
	var ce *sim.ConfigError
	switch {
	case errors.As(err, &ce):
		writeError(w, http.StatusBadRequest, "bot", err.Error())
		return
	case err != nil:
		busy(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, answerOf(name, req.length, run))
}

// percentiles ranks a whole run's points against each bot's shipped
// thousand seeds, if the run is one they describe: noise on, at the
// scenario's own length.
func percentiles(req request, s sim.Score) map[string]float64 {
	if !req.cfg.Noise || req.length != req.sc.Minutes || req.at != req.length {
		return nil
	}
	out := map[string]float64{}
	for _, b := range bots.Names() {
		if d, ok := bots.Shipped(req.cfg.Scenario, b); ok {
			out[b] = d.Percentile(s.Points)
		}
	}
	return out
}

// coachAnswer is what POST /api/debrief adds with "coach": true. Par is
// the run graded against (bots.Par): the expert's, which sees what the
// player saw, or the runbook's on a seed where it does better — Par.Bot
// says which. Hindsight is what perfect foresight of the seed would have
// scored, shown beside it and never graded against: never more than par,
// the runbook or any what-if shown with it (hindsightOf).
type coachAnswer struct {
	Grade     bots.Grade    `json:"grade"`
	Par       botAnswer     `json:"par"`
	Runbook   botAnswer     `json:"runbook"`
	Nothing   botAnswer     `json:"nothing"` // doing nothing on the seed: what the incident costs left alone
	Hindsight botAnswer     `json:"hindsight"`
	WhatIfs   []bots.WhatIf `json:"what_ifs"`
}

// coach grades a whole run against par and the runbook on its seed and
// finds the what-ifs that would have saved the most.
func (a *api) coach(ctx context.Context, req request, s sim.Score) (coachAnswer, error) {
	plain := req.cfg
	plain.Actions = nil
	par, parBot, err := bots.Par(ctx, plain)
	if err != nil {
		return coachAnswer{}, err
	}
	hs, err := a.game.hindsight(ctx, req.cfg)
	if err != nil {
		return coachAnswer{}, err
	}
	rb, err := bots.PlayContext(ctx, plain, bots.Runbook)
	if err != nil {
		return coachAnswer{}, err
	}
	nothing, err := bots.PlayBot(ctx, plain, bots.BotNothing)
	if err != nil {
		return coachAnswer{}, err
	}
	whatIfs, err := a.game.coaches.do(ctx, req.cfg.Query().Encode(), func(ctx context.Context) ([]bots.WhatIf, error) {
		return bots.Coach(ctx, req.cfg, par.Config.Actions)
	})
	if err != nil {
		return coachAnswer{}, err
	}
	if whatIfs == nil {
		whatIfs = []bots.WhatIf{}
	}
	hs, err = hindsightOf(req.cfg, hs, whatIfs)
	if err != nil {
		return coachAnswer{}, err
	}
	return coachAnswer{
		Grade:     bots.GradeScore(s, par.Score.Points, rb.Score.Points),
		Par:       answerOf(parBot, req.length, par),
		Runbook:   answerOf(bots.BotRunbook, req.length, rb),
		Nothing:   answerOf(bots.BotNothing, req.length, nothing),
		Hindsight: answerOf(bots.BotHindsight, req.length, hs),
		WhatIfs:   whatIfs,
	}, nil
}

// hindsightOf is the perfect-foresight run shown beside the what-ifs: the
// search's (bots.Hindsight, already no worse than par and the runbook), or
// the best what-if where one beats it. The search tries the timing of a
// few key moves on a run without actions; a what-if is the player's own
// run with one move changed, which the search never starts from — and
// "perfect foresight" scoring worse than a tip beside it would be a
// contradiction on the screen. The search's run is kept as the seed's
// (game.hindsight caches it); this one is the debrief's.
func hindsightOf(cfg sim.Config, hs bots.Run, whatIfs []bots.WhatIf) (bots.Run, error) {
	best := -1
	for i, w := range whatIfs {
		if w.Points < hs.Score.Points && (best < 0 || w.Points < whatIfs[best].Points) {
			best = i
		}
	}
	if best < 0 {
		return hs, nil
	}
	cfg.Actions = whatIfs[best].Actions
	frames, err := sim.Run(cfg)
	if err != nil {
		return bots.Run{}, err
	}
	sc, _ := sim.Lookup(cfg.Scenario)
	return bots.Run{Config: cfg, Score: sim.ScoreFrames(sc, frames)}, nil
}

// hint is the runbook's advice after a minute, for the training mode.
type hint struct {
	After   int          `json:"after"`  // the minute seen
	Minute  int          `json:"minute"` // the minute the advice would apply to
	Step    string       `json:"step"`   // the runbook's step, a catalogue key
	Actions []sim.Action `json:"actions"`
}

// hints gives the runbook's advice after each minute of [from, to), where
// it has any.
func hints(req request, frames []sim.Frame) []hint {
	out := []hint{}
	v := bots.ViewOf(req.sc, req.length, frames)
	for m := req.from; m < req.to && m+1 < req.length; m++ {
		step, acts := bots.Advise(v.Upto(m + 1))
		if step != "" {
			out = append(out, hint{After: m, Minute: m + 1, Step: step, Actions: acts})
		}
	}
	return out
}

// boolParam reads a switch given as JSON true/false or, in a query,
// 1/0/true/false.
func boolParam(raw json.RawMessage) (bool, bool) {
	switch strings.TrimSpace(string(raw)) {
	case "true", "1":
		return true, true
	case "false", "0":
		return false, true
	}
	return false, false
}
