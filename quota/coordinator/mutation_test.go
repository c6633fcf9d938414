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
