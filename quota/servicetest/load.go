package servicetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/afloat/afloat/quota/agent"
)

// Traffic is load on an agent's decision API (Agent.Load). Its methods
// are safe for concurrent use.
type Traffic struct {
	cancel   context.CancelFunc
	done     chan struct{}
	admitted atomic.Int64
}

// Load sends the agent's decision API requests of n tokens of tenant, one
// every 2 ms or so, until Stop or the end of the cluster; it counts the
// tokens admitted. A request that fails — the agent stopped, say — counts
// as refused, and the load goes on, as a client's would.
func (a *Agent) Load(tenant string, n int64) *Traffic {
	name, _ := json.Marshal(tenant) // a string always encodes
	body := fmt.Sprintf(`{"tenant":%s,"n":%d}`, name, n)
	ctx, cancel := context.WithCancel(a.cluster.ctx)
	tr := &Traffic{cancel: cancel, done: make(chan struct{})}
	client := a.cluster.Client(2 * time.Second)
	url := a.URL + "/v1/allow"
	a.cluster.loads.Go(func() {
		defer close(tr.done)
		for ctx.Err() == nil {
			resp, err := client.Post(url, "application/json", strings.NewReader(body))
			if err == nil {
				var ans agent.AllowAnswer
				json.NewDecoder(resp.Body).Decode(&ans) //nolint:errcheck // a body that does not decode admitted nothing
				resp.Body.Close()
				if ans.Allowed {
					tr.admitted.Add(n)
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	return tr
}

// Admitted is how many tokens the load has had admitted so far.
func (tr *Traffic) Admitted() int64 { return tr.admitted.Load() }

// Stop ends the load and waits for its last request's answer. Stopping
// twice is stopping once.
func (tr *Traffic) Stop() {
	tr.cancel()
	<-tr.done
}
