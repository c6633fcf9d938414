//go:build mutation

package chaos

import (
	"context"
	"sync"
	"time"

	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/internal/breakage"
	"github.com/afloat/afloat/quota/region"
)

// faults are the deliberate mistakes a mutation check plants in the
// coordinator, the ledger and the regions, to show that the checker
// catches each: this build has the tag mutation, which no release has
// (faults.go).
type faults struct{ set breakage.Set }

func (f faults) newLimiter(cfg region.Config) (*region.Limiter, error) {
	return region.NewBroken(cfg, f.set)
}

func (f faults) openCore(ctx context.Context, cfg coordinator.Config, l coordinator.Ledger, now time.Duration) (*coordinator.Core, error) {
	return coordinator.OpenBroken(ctx, cfg, l, now, f.set)
}

func (f faults) ledger(l coordinator.Ledger) coordinator.Ledger {
	if f.set.NoFencing {
		return &unfenced{Ledger: l}
	}
	return l
}

// unfenced is a ledger without epoch fencing, a deliberate fault of the
// mutation checks: it writes every commit at the newest epoch, so a paused
// coordinator that wakes up keeps granting beside its successor.
type unfenced struct {
	coordinator.Ledger
	mu    sync.Mutex
	epoch uint64
}

func (u *unfenced) Fence(ctx context.Context) (coordinator.Snapshot, error) {
	snap, err := u.Ledger.Fence(ctx)
	u.mu.Lock()
	u.epoch = max(u.epoch, snap.Epoch)
	u.mu.Unlock()
	return snap, err
}

func (u *unfenced) Commit(ctx context.Context, _ uint64, ops ...coordinator.Op) error {
	u.mu.Lock()
	epoch := u.epoch
	u.mu.Unlock()
	return u.Ledger.Commit(ctx, epoch, ops...)
}
