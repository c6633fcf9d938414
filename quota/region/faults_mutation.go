//go:build mutation

package region

import "github.com/afloat/afloat/quota/internal/breakage"

// faults are the deliberate mistakes the chaos harness plants to show that
// its checker catches each (its mutation checks): this build has the tag
// mutation, which no release has (faults.go).
type faults struct{ set breakage.Set }

func (f faults) renewRefills() bool    { return f.set.RenewRefills }
func (f faults) cachesOverBurst() bool { return f.set.CachesOverBurst }

// NewBroken is New with the deliberate faults of set planted, for the
// chaos harness's mutation checks. Only a build with the tag mutation has
// it, and set's type is internal to quota/.
func NewBroken(cfg Config, set breakage.Set) (*Limiter, error) {
	l, err := New(cfg)
	if err != nil {
		return nil, err
	}
	l.broken = faults{set}
	return l, nil
}
