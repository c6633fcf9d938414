package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/remote"
)

// An agent stands by while another agent holds its region: the
// coordinator refuses its attach until the holder's leases have all
// stopped counting (a rolling update that started the new agent before
// stopping the old, a second replica, a restart after a crash). It spends
// nothing meanwhile, says so in /readyz and the standby metric, and logs
// the wait once, then once a minute.

// heldLogEvery is how often a standing-by agent logs that it still waits.
const heldLogEvery = time.Minute

// refused notes a failed call: a refusal to attach puts the agent on
// standby.
func (a *Agent) refused(err error) {
	var held *quota.HeldError
	if !errors.As(err, &held) {
		return
	}
	a.held.Store(&heldAt{held, time.Now()})
	a.heldMu.Lock()
	defer a.heldMu.Unlock()
	a.heldTimes++
	if !a.heldSaid.IsZero() && time.Since(a.heldSaid) < heldLogEvery {
		return
	}
	a.o.Logger.Warn("quota region: "+waitText(a.o.Name, held, held.Wait),
		"region", a.o.Name, "holder", held.Holder, "wait", held.Wait, "refusals", a.heldTimes)
	a.heldSaid, a.heldTimes = time.Now(), 0
}

// heldAt is a refusal to attach and when it came.
type heldAt struct {
	*quota.HeldError
	at time.Time
}

// waitText says who holds the region and how long, at the earliest, the
// agent waits: until the holder's last lease stops counting — after a
// crash, up to the longest lease duration and margin among the region's
// tenants after the holder's last grant (docs/quota/design.md, "One agent
// per region").
func waitText(region string, held *quota.HeldError, left time.Duration) string {
	if left <= 0 {
		return fmt.Sprintf("region %s is held by another agent (%s); waiting until its leases end, any moment now", region, held.Holder)
	}
	return fmt.Sprintf("region %s is held by another agent (%s); waiting until its leases end, in %v at the earliest",
		region, held.Holder, (left + 100*time.Millisecond - 1).Truncate(100*time.Millisecond))
}

// attached notes that a call went through: the agent holds its region.
func (a *Agent) attached() {
	if a.held.Swap(nil) == nil {
		return
	}
	a.heldMu.Lock()
	a.heldSaid, a.heldTimes = time.Time{}, 0
	a.heldMu.Unlock()
	a.o.Logger.Info("quota region: attached the region; the other agent's leases have ended", "region", a.o.Name)
}

// standby is why the agent is not ready while another holds its region;
// empty when it is not standing by.
func (a *Agent) standby() string {
	held := a.held.Load()
	if held == nil {
		return ""
	}
	return waitText(a.o.Name, held.HeldError, held.Wait-time.Since(held.at))
}

// detach ends the agent's hold on its region, once it spends nothing:
// every lease of the region stops counting at the coordinator.
func (a *Agent) detach(ctx context.Context, client *remote.Client) error {
	if client.Incarnation() == 0 {
		return nil // never attached, superseded or detached: nothing to hand over
	}
	if err := client.Detach(ctx); err != nil {
		a.o.Logger.Warn("quota region: detach failed; the next agent of the region waits until the leases end",
			"region", a.o.Name, "err", err)
		return err
	}
	a.o.Logger.Info("quota region: detached; the next agent of the region may attach at once", "region", a.o.Name)
	return nil
}
