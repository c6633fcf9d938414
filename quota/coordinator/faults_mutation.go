//go:build mutation

package coordinator

import (
	"context"
	"time"

	"github.com/afloat/afloat/quota/internal/breakage"
)

// faults are the deliberate mistakes the chaos harness plants to show that
// its checker catches each (its mutation checks): this build has the tag
// mutation, which no release has (faults.go).
type faults struct{ set breakage.Set }

func (f faults) fullToEvery() bool        { return f.set.FullToEvery }
func (f faults) reuseBeforeConfirm() bool { return f.set.ReuseBeforeConfirm }
func (f faults) noIncarnations() bool     { return f.set.NoIncarnations }
func (f faults) noRestoreFence() bool     { return f.set.NoRestoreFence }
func (f faults) noLeaderProof() bool      { return f.set.NoLeaderProof }

// OpenBroken is Open with the deliberate faults of set planted, for the
// chaos harness's mutation checks. Only a build with the tag mutation has
// it, and set's type is internal to quota/.
func OpenBroken(ctx context.Context, cfg Config, ledger Ledger, now time.Duration, set breakage.Set) (*Core, error) {
	c, err := Open(ctx, cfg, ledger, now)
	if err != nil {
		return nil, err
	}
	c.broken = faults{set}
	return c, nil
}
