//go:build !mutation

package chaos

import (
	"context"
	"time"

	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/region"
)

// faults are the deliberate mistakes a mutation check plants in the
// coordinator, the ledger and the regions, to show that the checker
// catches each. Only a build with the tag mutation has them
// (faults_mutation.go, with the tests that plant them); in every other
// build a run has none, and builds the real components unchanged.
type faults struct{}

func (faults) newLimiter(cfg region.Config) (*region.Limiter, error) { return region.New(cfg) }

func (faults) openCore(ctx context.Context, cfg coordinator.Config, l coordinator.Ledger, now time.Duration) (*coordinator.Core, error) {
	return coordinator.Open(ctx, cfg, l, now)
}

func (faults) ledger(l coordinator.Ledger) coordinator.Ledger { return l }
