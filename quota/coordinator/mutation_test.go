//go:build mutation

package coordinator

import (
	"testing"

	"github.com/afloat/afloat/quota/internal/breakage"
)

// TestMutationUnfencedIncarnations: with the incarnations unfenced (the
// NoIncarnations fault), TestOneIncarnationSpends's property fails: it can
// tell.
func TestMutationUnfencedIncarnations(t *testing.T) {
	c := twoTenants(t, NewMemLedger(), 0)
	c.broken = faults{breakage.Set{NoIncarnations: true}}
	v := oneIncarnationViolations(t, c, true)
	if v == 0 {
		t.Fatal("with the incarnations unfenced, the property still held: it tests nothing")
	}
	t.Logf("unfenced: %d times a lease of another incarnation counted", v)
}

// TestMutationNoRestoreFence: a coordinator that grants at once on a
// restored ledger (the NoRestoreFence fault) grants us a share that adds
// up above R with eu's lease the backup lacks: TestRestoreWaitsOutMissingLeases
// can tell.
func TestMutationNoRestoreFence(t *testing.T) {
	over, _ := restoreOverlap(t, func(b *ledgered) { b.broken = faults{breakage.Set{NoRestoreFence: true}} })
	if over == 0 {
		t.Fatal("without the fence, no grant overlapped eu's lease above R: the test tests nothing")
	}
	t.Logf("unfenced: us and eu's leases add up to %v above R", over)
}
