package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Coverage is what the agents' GET /readyz said at one instant: how many
// of the tenants each region holds a valid lease for.
type Coverage struct {
	At time.Time `json:"at"`
	// Leased is, by region (Config.Regions's order), the tenants with a
	// valid lease; −1 where the agent did not answer.
	Leased []int `json:"leased"`
	// Tenants is how many tenants each region serves.
	Tenants int `json:"tenants"`
	// Standby names the regions whose agent stands by for another.
	Standby []string `json:"standby,omitempty"`
	// Waiting names, by region, a few of the tenants without a valid
	// lease (those the agent named first).
	Waiting [][]string `json:"waiting,omitempty"`
}

// Pairs is how many tenant–region pairs hold a valid lease (an agent
// that did not answer counts none).
func (cv Coverage) Pairs() int {
	n := 0
	for _, l := range cv.Leased {
		n += max(l, 0)
	}
	return n
}

// All says whether every tenant holds a valid lease in every region, and
// every agent answered and is ready.
func (cv Coverage) All() bool {
	if len(cv.Standby) > 0 {
		return false
	}
	for _, l := range cv.Leased {
		if l != cv.Tenants {
			return false
		}
	}
	return true
}

func (cv Coverage) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d tenant–region pairs leased (", cv.Pairs(), cv.Tenants*len(cv.Leased))
	for i, l := range cv.Leased {
		if i > 0 {
			b.WriteString(", ")
		}
		if l < 0 {
			b.WriteString("no answer")
		} else {
			fmt.Fprintf(&b, "%d", l)
		}
	}
	b.WriteString(")")
	for i, w := range cv.Waiting {
		if len(w) > 0 && i < len(cv.Leased) {
			fmt.Fprintf(&b, "; region %d waits for %s", i+1, strings.Join(w, ", "))
		}
	}
	if len(cv.Standby) > 0 {
		fmt.Fprintf(&b, ", standing by: %s", strings.Join(cv.Standby, ", "))
	}
	return b.String()
}

// readyz is the part of an agent's GET /readyz the harness reads
// (quota/internal/ops.Readiness): whether it is ready, how far it is
// ("7,200 of 10,000 tenants leased"), how many tenants lack a valid
// lease, whether it stands by. The leased count is read from Progress
// where the agent reports it, else it is Config.Tenants less Missing.
type readyz struct {
	Ready    bool     `json:"ready"`
	Missing  int      `json:"missing"`
	Progress string   `json:"progress"`
	Standby  string   `json:"standby"`
	Waiting  []string `json:"waiting"`
}

// leased is the count Progress states ("7,200 of 10,000 tenants
// leased"), and whether it states one.
func (rd readyz) leased() (int, bool) {
	var leased, of int
	if _, err := fmt.Sscanf(strings.ReplaceAll(rd.Progress, ",", ""), "%d of %d tenants leased", &leased, &of); err != nil {
		return 0, false
	}
	return leased, true
}

// Coverage asks every agent's GET /readyz at once.
func (c *Cluster) Coverage(ctx context.Context) Coverage {
	cv := Coverage{At: time.Now(), Leased: make([]int, len(c.Agents)), Tenants: c.cfg.Tenants, Waiting: make([][]string, len(c.Agents))}
	standby := make([]string, len(c.Agents))
	var wg sync.WaitGroup
	for i, u := range c.AgentURLs {
		wg.Go(func() {
			cv.Leased[i] = -1
			if !c.Agents[i].Running() {
				return
			}
			body, code, err := c.get(ctx, u+"/readyz")
			var rd readyz
			if err != nil || (code != 200 && code != 503) || json.Unmarshal(body, &rd) != nil {
				return
			}
			if n, ok := rd.leased(); ok {
				cv.Leased[i] = n
			} else {
				cv.Leased[i] = max(0, c.cfg.Tenants-rd.Missing)
			}
			if rd.Standby != "" {
				standby[i] = c.cfg.Regions[i]
			}
			cv.Waiting[i] = rd.Waiting[:min(len(rd.Waiting), waitingNamed)]
		})
	}
	wg.Wait()
	for _, s := range standby {
		if s != "" {
			cv.Standby = append(cv.Standby, s)
		}
	}
	return cv
}

// waitingNamed is how many of a region's tenants without a lease a
// Coverage names.
const waitingNamed = 5

// pollEvery is how often the harness asks the agents' readiness.
const pollEvery = 250 * time.Millisecond

// Leasing is how the agents came to lease every tenant.
type Leasing struct {
	// Leased says whether every tenant held a valid lease in every
	// region within the bound; Took is how long from the start it took.
	Leased bool          `json:"leased"`
	Took   time.Duration `json:"took_ns"`
	// Best is the most pairs leased at one poll (the last poll when
	// Leased).
	Best Coverage `json:"best"`
	// Progress is the pairs leased about every second from the start.
	Progress []Progress `json:"progress"`
}

// Progress is the pairs leased at one instant, counted from a start.
type Progress struct {
	After time.Duration `json:"after_ns"`
	Pairs int           `json:"pairs"`
}

func (l Leasing) String() string {
	if l.Leased {
		return fmt.Sprintf("every tenant leased in every region after %v", l.Took.Round(10*time.Millisecond))
	}
	return fmt.Sprintf("NOT every tenant leased within %v: at best %v", l.Took.Round(time.Second), l.Best)
}

// WaitLeased polls the agents until every tenant holds a valid lease in
// every region, from since, for at most bound (counted from since).
// progress, if not nil, is called with each second's coverage.
func (c *Cluster) WaitLeased(ctx context.Context, since time.Time, bound time.Duration, progress func(Coverage)) Leasing {
	var l Leasing
	lastProgress := time.Time{}
	for {
		cv := c.Coverage(ctx)
		if cv.Pairs() >= l.Best.Pairs() {
			l.Best = cv
		}
		if cv.At.Sub(lastProgress) >= time.Second {
			lastProgress = cv.At
			l.Progress = append(l.Progress, Progress{cv.At.Sub(since), cv.Pairs()})
			if progress != nil {
				progress(cv)
			}
		}
		if cv.All() {
			l.Leased, l.Took, l.Best = true, cv.At.Sub(since), cv
			return l
		}
		if cv.At.Sub(since) >= bound || ctx.Err() != nil {
			l.Took = cv.At.Sub(since)
			return l
		}
		select {
		case <-ctx.Done():
		case <-time.After(pollEvery):
		}
	}
}
