package overload

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/afloat/afloat/bulkhead"
	"github.com/afloat/afloat/internal/vclock"
)

// The seed's two games, played as the article plays them: in whole
// periods. Two CPUs; each request needs 3 units of work; one request
// arrives at the start of every period. In a period the CPUs are shared
// evenly among the requests in work, none getting more than one unit, and
// capacity a request cannot use goes to the others (work-conserving). A
// request leaves at the end of the period in which its work is done, so it
// takes a whole number of periods.
//
// Game 1 has no limit. Game 2 has the bouncer — the real bulkhead, with 2
// inside and 2 waiting: a newcomer who finds 2 waiting goes home.
const (
	gameCPUs = 2
	gameWork = 3
	// MaxPeriods bounds a game's length.
	MaxPeriods = 60
)

// GameNames lists the games.
var GameNames = []string{"game1", "game2"}

// Cell is one request in one period of a game.
type Cell struct {
	// State is "work" (in work this period), "done" (its work finished in
	// this period: it leaves at the end of it), "queued" (waiting outside)
	// or "away" (turned away at the door).
	State string `json:"state"`
	// Got is the work it received in the period; Left, the work left at
	// the period's end.
	Got  float64 `json:"got"`
	Left float64 `json:"left"`
}

// GameRequest is one request's row of the grid.
type GameRequest struct {
	Arrived int `json:"arrived"` // the period it arrived in, from 1
	// Took is the periods it spent in the system, its arrival's and its
	// last included; 0 while it is still there or if it was turned away.
	Took  int    `json:"took"`
	Cells []Cell `json:"cells"` // from its arrival on, one a period while it is in the system
}

// GamePeriod is one column of the grid.
type GamePeriod struct {
	Period   int `json:"period"`
	Inside   int `json:"inside"`    // in work this period: the concurrency the article counts
	Waiting  int `json:"waiting"`   // queued outside
	InSystem int `json:"in_system"` // both
	Finished int `json:"finished"`  // leave at the end of it
	Away     int `json:"away"`      // turned away at its start
}

// Game is a game played for some periods.
type Game struct {
	Name     string        `json:"name"`
	CPUs     int           `json:"cpus"`
	Work     int           `json:"work"`
	Inside   int           `json:"inside"`  // the bouncer's limit; 0 for none
	Outside  int           `json:"outside"` // and its queue
	Periods  []GamePeriod  `json:"periods"`
	Requests []GameRequest `json:"requests"`
}

// gameReq is a request during play.
type gameReq struct {
	i      int     // its row
	left   float64 // work left
	got    float64 // work received this period
	permit bulkhead.Permit
}

// doneEps absorbs the rounding of shares such as 2/3: a request with less
// work left than this is done.
const doneEps = 1e-9

// PlayGame plays a game ("game1" or "game2") for 1 to MaxPeriods periods.
// It is deterministic.
func PlayGame(name string, periods int) (Game, error) {
	if !slices.Contains(GameNames, name) {
		return Game{}, fmt.Errorf("%w: game %q: want one of %s", ErrConfig, name, strings.Join(GameNames, ", "))
	}
	if periods < 1 || periods > MaxPeriods {
		return Game{}, fmt.Errorf("%w: periods %d: want 1 to %d", ErrConfig, periods, MaxPeriods)
	}
	g := Game{Name: name, CPUs: gameCPUs, Work: gameWork}
	clk := vclock.New(epoch)
	var door *bulkhead.Bulkhead
	if name == "game2" {
		g.Inside, g.Outside = 2, 2
		var err error
		if door, err = bulkhead.New(g.Inside, bulkhead.WithQueue(g.Outside), bulkhead.WithClock(clock{clk})); err != nil {
			return Game{}, err
		}
	}
	var inside, waiting, finished []*gameReq
	for p := 1; p <= periods; p++ {
		clk.AdvanceTo(epoch.Add(time.Duration(p) * time.Second))
		// Those done last period leave, and the bouncer lets the next in.
		for _, r := range finished {
			r.permit.Release()
		}
		finished = finished[:0]

		// The newcomer.
		r := &gameReq{i: len(g.Requests), left: gameWork}
		g.Requests = append(g.Requests, GameRequest{Arrived: p})
		col := GamePeriod{Period: p}
		if door == nil {
			inside = append(inside, r)
		} else {
			waiting = append(waiting, r)
			door.Submit(bulkhead.PriorityNormal, time.Time{}, func(pm bulkhead.Permit, err error) {
				waiting = slices.DeleteFunc(waiting, func(w *gameReq) bool { return w == r })
				if err != nil {
					g.Requests[r.i].Cells = append(g.Requests[r.i].Cells, Cell{State: "away", Left: gameWork})
					col.Away++
					return
				}
				r.permit = pm
				inside = append(inside, r)
			})
		}
		// Releases above admit the waiters in the callbacks of their own
		// Submit, which move them inside; so does a newcomer with room.

		// Share the CPUs: evenly, at most one unit each, and what a request
		// cannot use goes to the others.
		share(inside, gameCPUs)
		col.Inside, col.Waiting = len(inside), len(waiting)
		col.InSystem = col.Inside + col.Waiting
		for _, w := range waiting {
			g.Requests[w.i].Cells = append(g.Requests[w.i].Cells, Cell{State: "queued", Left: w.left})
		}
		kept := inside[:0]
		for _, w := range inside {
			c := Cell{State: "work", Got: w.got, Left: w.left}
			if w.left < doneEps {
				c = Cell{State: "done", Got: w.got}
				g.Requests[w.i].Took = p - g.Requests[w.i].Arrived + 1
				finished = append(finished, w)
				col.Finished++
			} else {
				kept = append(kept, w)
			}
			g.Requests[w.i].Cells = append(g.Requests[w.i].Cells, c)
		}
		inside = kept
		g.Periods = append(g.Periods, col)
	}
	return g, nil
}

// share gives each request in work its part of cpus for one period.
func share(inside []*gameReq, cpus float64) {
	// Water-filling: the requests that need least are served first; each
	// gets the even share of what is left, or all it needs if that is less.
	order := slices.Clone(inside)
	slices.SortStableFunc(order, func(a, b *gameReq) int {
		switch {
		case a.left < b.left:
			return -1
		case a.left > b.left:
			return 1
		}
		return 0
	})
	left := cpus
	for i, r := range order {
		even := min(1, left/float64(len(order)-i))
		got := min(r.left, even)
		r.left -= got
		left -= got
		r.got = got
	}
}
