package scale

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Traffic asks every region's decision API (POST /v1/allow) for one
// token of each of a few tenants at a steady pace, so that decisions are
// exercised beside the renewals. Start it with Cluster.StartTraffic.
type Traffic struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	counts map[string]*Decisions
}

// Decisions counts a region's answers: allowed, refused (200 with
// "allowed": false), and failed (no answer, or another status).
type Decisions struct {
	Allowed int64 `json:"allowed"`
	Refused int64 `json:"refused"`
	Failed  int64 `json:"failed"`
}

// StartTraffic sends each of tenants perSecond requests a second into
// every region until Stop.
func (c *Cluster) StartTraffic(tenants []string, perSecond float64) *Traffic {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &Traffic{cancel: cancel, counts: map[string]*Decisions{}}
	client := &http.Client{Timeout: 2 * time.Second}
	for i, r := range c.cfg.Regions {
		tr.counts[r] = &Decisions{}
		for _, tenant := range tenants {
			body := `{"tenant":"` + tenant + `","n":1}`
			tr.wg.Go(func() {
				t := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
				defer t.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-t.C:
					}
					allowed, ok := allow(ctx, client, c.AgentURLs[i], body)
					if ctx.Err() != nil {
						return
					}
					tr.mu.Lock()
					switch d := tr.counts[r]; {
					case !ok:
						d.Failed++
					case allowed:
						d.Allowed++
					default:
						d.Refused++
					}
					tr.mu.Unlock()
				}
			})
		}
	}
	return tr
}

func allow(ctx context.Context, client *http.Client, base, body string) (allowed, ok bool) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/allow", strings.NewReader(body))
	if err != nil {
		return false, false
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return false, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // for the connection's reuse
		return false, false
	}
	var ans struct {
		Allowed bool `json:"allowed"`
	}
	if json.NewDecoder(resp.Body).Decode(&ans) != nil {
		return false, false
	}
	return ans.Allowed, true
}

// Counts are the answers so far, by region.
func (tr *Traffic) Counts() map[string]Decisions {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := map[string]Decisions{}
	for r, d := range tr.counts {
		out[r] = *d
	}
	return out
}

// Stop ends the traffic and returns the answers, by region.
func (tr *Traffic) Stop() map[string]Decisions {
	tr.cancel()
	tr.wg.Wait()
	return tr.Counts()
}
