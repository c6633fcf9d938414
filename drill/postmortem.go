package drill

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/afloat/afloat/sim"
	"github.com/afloat/afloat/sim/bots"
)

// AlertEvent is an alert firing or resolving, as the team's Alertmanager
// told the drill (POST /alerts, its webhook), with the simulated minutes
// it happened and reached the drill.
type AlertEvent struct {
	Name     string    `json:"name"`
	Severity string    `json:"severity"`
	Status   string    `json:"status"` // firing or resolved
	At       time.Time `json:"at"`     // when it fired (startsAt) or resolved (endsAt), on the wall clock
	Received time.Time `json:"received"`
	key      string    // the alert's fingerprint and status: each is told once
}

// judged is the costly part of a postmortem, computed once when the drill
// ends: the score against par and the runbook, and the coach's what-ifs.
type judged struct {
	score   sim.Score
	grade   bots.Grade
	par     bots.Run
	runbook bots.Run
	whatIfs []bots.WhatIf
}

// judge scores a whole run (the drill's, ended) as the console's debrief
// does — sim.ScoreFrames on the frames of the run its share link gives —
// and asks the bots for par, the runbook and the coach's what-ifs.
func judge(ctx context.Context, run sim.Config, frames []sim.Frame) (judged, error) {
	sc, err := sim.Lookup(run.Scenario)
	if err != nil {
		return judged{}, err
	}
	j := judged{score: sim.ScoreFrames(sc, frames)}
	plain := run
	plain.Actions = nil
	if j.par, err = bots.Expert(ctx, plain); err != nil {
		return judged{}, err
	}
	if j.runbook, err = bots.PlayContext(ctx, plain, bots.Runbook); err != nil {
		return judged{}, err
	}
	j.grade = bots.GradeScore(j.score, j.par.Score.Points, j.runbook.Score.Points)
	if j.whatIfs, err = bots.Coach(ctx, run, j.par.Config.Actions); err != nil {
		return judged{}, err
	}
	return j, nil
}

// moment is a line of the postmortem's timeline.
type moment struct {
	minute int
	order  int // within a minute: what happened, then what was seen, then what was done
	text   string
}

// writePostmortem writes the drill's postmortem in Markdown: what
// happened (the reveal), the timeline — the scenario's events, the first
// sign of each incident on the dashboard, the alerts the team's
// Alertmanager delivered, the model's own page rule, the levers pulled,
// the builds — the score against par and the runbook, the coach's
// what-ifs, and the share link that replays the drill in the console.
func (d *Drill) writePostmortem(w io.Writer, j judged, alerts []AlertEvent, console string) error {
	run, frames := d.Run(), d.frames
	sc := d.sc
	clock := func(m int) string { return sim.Clock(sc.Start + m) }
	var b strings.Builder
	fmt.Fprintf(&b, "# Postmortem: %s (drill, seed %d)\n\n", sc.Title, run.Seed)
	fmt.Fprintf(&b, "A drill of afloat's `%s` scenario, seed %d: %d simulated minutes, %s to %s, a simulated minute every %v of wall time (%s to %s).\n\n",
		sc.Name, run.Seed, d.length, clock(0), clock(d.length), d.speed, d.start.Format(time.RFC3339), d.End().Format(time.RFC3339))
	fmt.Fprintf(&b, "> %s\n\n", sc.Briefing)

	b.WriteString("## What happened\n\n")
	s, _ := sim.New(sc, run.Seed, run.Noise)
	found, _ := bots.Diagnose(run, frames)
	reveal := revealOf(s, clock)
	if len(reveal) == 0 {
		reveal = []string{"Nothing went wrong: a quiet morning. Every move cost something."}
	}
	for _, r := range reveal {
		fmt.Fprintf(&b, "- %s\n", r)
	}
	for _, f := range found {
		fmt.Fprintf(&b, "- First sign of the %s on the dashboard: %s at %s.\n", f.Incident, signText(f.Shown), f.Shown.Clock)
	}

	b.WriteString("\n## Timeline\n\n| time | minute | what |\n|---|---|---|\n")
	var tl []moment
	add := func(m, order int, format string, args ...any) {
		tl = append(tl, moment{m, order, fmt.Sprintf(format, args...)})
	}
	for _, ev := range s.Events() {
		switch {
		case ev.Minute >= d.length:
		case ev.Kind == sim.EventDeploy && ev.Errors > 0:
			add(ev.Minute, 0, "Deploy of build %s — a bad build, failing %.1f %% of its requests (revealed now)", d.versions[ev.Minute], 100*ev.Errors)
		case ev.Kind == sim.EventDeploy:
			add(ev.Minute, 0, "Deploy of build %s — a good build", d.versions[ev.Minute])
		case ev.Kind == sim.EventFlush:
			add(ev.Minute, 0, "The whole cache is flushed (revealed now)")
		}
	}
	if surge, ok := s.Surge(); ok && int(surge.Start) < d.length {
		add(int(surge.Start), 0, "A surge starts: up to %.1f× the traffic (revealed now)", surge.Peak)
	}
	for _, f := range found {
		add(f.Shown.Minute, 1, "First sign on the dashboard: %s", signText(f.Shown))
	}
	for _, a := range alerts {
		m, _ := d.MinuteAt(a.At)
		r, _ := d.MinuteAt(a.Received)
		verb := "fired"
		if a.Status == "resolved" {
			verb = "resolved"
		}
		add(m, 2, "Alert **%s** (%s) %s; Alertmanager delivered it at %s", a.Name, a.Severity, verb, clock(r))
	}
	debrief := sim.Summarize(sc, frames, run.Actions)
	for _, mo := range debrief.Timeline {
		switch mo.Kind {
		case "page":
			add(mo.Minute, 2, "The model's page rule holds (burn ≥ 14.4× over 1h and 5m; 1h burn %.1f×)", mo.Burn1h)
		case "page_end":
			add(mo.Minute, 2, "The model's page rule stops holding")
		case "action":
			add(mo.Minute, 3, "Lever: %s (pulled during %s)", actionText(*mo.Action), clock(mo.Minute-1))
		}
	}
	for m := 1; m < len(frames); m++ {
		if d.versions[m] != d.versions[m-1] && !frames[m].Deploy {
			add(m, 0, "Build %s serves again (build_info)", d.versions[m])
		}
	}
	slices.SortStableFunc(tl, func(x, y moment) int {
		if x.minute != y.minute {
			return x.minute - y.minute
		}
		return x.order - y.order
	})
	for _, mo := range tl {
		fmt.Fprintf(&b, "| %s | %d | %s |\n", clock(mo.minute), mo.minute, mo.text)
	}

	sco := j.score
	fmt.Fprintf(&b, "\n## Score\n\n**%.1f points** (fewer is better): %d star", sco.Points, j.grade.Stars)
	if j.grade.Stars != 1 {
		b.WriteString("s")
	}
	fmt.Fprintf(&b, ". Par (the expert, who sees what you saw) %.1f; the runbook %.1f; three stars up to %.1f, two up to %.1f.\n\n",
		j.grade.Par, j.grade.Runbook, j.grade.ThreeStars, j.grade.TwoStars)
	if sco.Failed {
		fmt.Fprintf(&b, "The month's error budget ran out at %s: the game was lost there.\n\n", clock(sco.FailedMinute))
	}
	b.WriteString("| charged for | quantity | points |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| error budget spent | %.2f %% of the month's | %.1f |\n", 100*sco.BudgetSpent, sco.BudgetPoints)
	fmt.Fprintf(&b, "| failed requests | %.0f | %.1f |\n", sco.Errors, sco.ErrorPoints)
	fmt.Fprintf(&b, "| shed requests | %.0f | %.1f |\n", sco.Shed, sco.ShedPoints)
	fmt.Fprintf(&b, "| served without recommendations | %.0f | %.1f |\n", sco.Degraded, sco.DegradedPoints)
	fmt.Fprintf(&b, "| stale answers | %.0f | %.1f |\n", sco.Stale, sco.StalePoints)
	fmt.Fprintf(&b, "| the fleet's bill | $%.2f | %.1f |\n", sco.Cost, sco.MoneyPoints)
	fmt.Fprintf(&b, "| minutes without N+1 headroom | %d | %.1f |\n", sco.Fragile, sco.FragilePoints)
	if len(j.par.Config.Actions) > 0 {
		b.WriteString("\nPar's moves: ")
		var moves []string
		for _, a := range j.par.Config.Actions {
			moves = append(moves, fmt.Sprintf("%s at %s", actionText(a), clock(a.Minute)))
		}
		b.WriteString(strings.Join(moves, "; ") + ".\n")
	}

	b.WriteString("\n## What the coach would have done\n\n")
	if len(j.whatIfs) == 0 {
		b.WriteString("No single change to your moves saves a point.\n")
	}
	for i, wi := range j.whatIfs {
		fmt.Fprintf(&b, "%d. %s — %.1f points saved (%.1f instead of %.1f).\n", i+1, whatIfText(wi, clock), wi.Gain, wi.Points, sco.Points)
	}

	share := run.Query().Encode()
	fmt.Fprintf(&b, "\n## Replay\n\n%s/?%s#debrief\n\nThe share link carries the scenario, the seed and the levers: the console replays the drill minute for minute, and its debrief scores it as above.\n",
		strings.TrimRight(console, "/"), share)
	_, err := io.WriteString(w, b.String())
	return err
}

// revealOf tells what the seed drew: the scenario's incidents, which the
// team was not told.
func revealOf(s *sim.Sim, clock func(int) string) []string {
	var out []string
	for _, ev := range s.Events() {
		switch {
		case ev.Kind == sim.EventDeploy && ev.Errors > 0:
			out = append(out, fmt.Sprintf("A bad deploy at %s: the new build failed %.1f %% of its requests and needed %.2f× the CPU.", clock(ev.Minute), 100*ev.Errors, constant("bad_build_cpu")))
		case ev.Kind == sim.EventDeploy:
			out = append(out, fmt.Sprintf("A deploy at %s shipped a good build: its marker was a red herring.", clock(ev.Minute)))
		case ev.Kind == sim.EventFlush:
			out = append(out, fmt.Sprintf("At %s the whole cache was flushed.", clock(ev.Minute)))
		}
	}
	if surge, ok := s.Surge(); ok {
		out = append(out, fmt.Sprintf("A traffic surge from %s: up to %.1f× over %.0f minutes, %.0f minutes at its peak, then a decay of %.0f minutes.",
			clock(int(surge.Start)), surge.Peak, surge.Ramp, surge.Plateau, surge.Decay))
	}
	return out
}

// signText tells a sign on the dashboard.
func signText(s bots.Sign) string {
	switch s.Kind {
	case bots.SignDeploy:
		return "the deploy marker"
	case bots.SignErrors:
		return fmt.Sprintf("the error rate at %.2f %%, past the SLO's 0.1 %%", 100*s.Value)
	case bots.SignFlush:
		return fmt.Sprintf("the cache's hit rate down to %.0f %%", 100*s.Value)
	case bots.SignRequests:
		return fmt.Sprintf("%.0f requests a second, 15 %% above the daily curve", s.Value)
	case bots.SignPage:
		return "the burn-rate page"
	case bots.SignDatabase:
		return fmt.Sprintf("the database at %.0f %% of its capacity", 100*s.Value)
	}
	return s.Kind
}

// actionText tells a lever as afloat drill lever takes it.
func actionText(a sim.Action) string {
	spec, _ := sim.LookupControl(a.Control)
	name := strings.ReplaceAll(string(a.Control), "_", "-")
	switch spec.Kind {
	case sim.KindPress:
		return name
	case sim.KindBool:
		return fmt.Sprintf("%s %v", name, a.Bool())
	}
	return fmt.Sprintf("%s %g", name, a.Value)
}

// whatIfText tells a what-if.
func whatIfText(w bots.WhatIf, clock func(int) string) string {
	var s string
	switch w.Kind {
	case "moved":
		s = fmt.Sprintf("%s at %s instead of %s", actionText(w.Action), w.Clock, clock(w.Action.Minute))
	case "removed":
		s = fmt.Sprintf("no %s at %s", actionText(w.Action), clock(w.Action.Minute))
	default:
		s = fmt.Sprintf("%s at %s", actionText(w.Action), w.Clock)
	}
	if w.Sign != nil && w.Sign.Kind != bots.SignBriefing {
		s += fmt.Sprintf(", answering %s at %s", signText(*w.Sign), w.Sign.Clock)
	}
	return s
}
