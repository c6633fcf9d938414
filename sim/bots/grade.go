package bots

import (
	"math"

	"github.com/afloat/afloat/sim"
)

// Grade is a run's stars, from par (the expert's points on the same seed)
// and the runbook bot's points on the same seed:
//
//   - three stars within ThreeStars: par plus 10 %, and at least 5 points;
//   - two stars within TwoStars: as good as the runbook, give or take 5 %
//     and 2 points (or par's line, if that is higher);
//   - one star for a run that kept some of the month's budget;
//   - none when the budget ran out: the game is lost.
type Grade struct {
	Stars      int     `json:"stars"`
	Par        float64 `json:"par"`
	Runbook    float64 `json:"runbook"`
	ThreeStars float64 `json:"three_stars"` // the most points that earn three stars
	TwoStars   float64 `json:"two_stars"`   // the most points that earn two
	Failed     bool    `json:"failed"`      // the month's budget ran out
	OverPar    float64 `json:"over_par"`    // points − par
}

// GradeScore grades a score against par and the runbook's points.
func GradeScore(s sim.Score, par, runbook float64) Grade {
	g := Grade{Par: par, Runbook: runbook, Failed: s.Failed, OverPar: s.Points - par}
	g.ThreeStars = par + math.Max(5, 0.1*par)
	g.TwoStars = math.Max(g.ThreeStars, 1.05*runbook+2)
	switch {
	case s.Failed:
		g.Stars = 0
	case s.Points <= g.ThreeStars:
		g.Stars = 3
	case s.Points <= g.TwoStars:
		g.Stars = 2
	default:
		g.Stars = 1
	}
	return g
}
