package heap

import (
	"math/rand/v2"
	"slices"
	"testing"
)

type item struct {
	key, seq int
	index    int
}

func less(a, b *item) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	return a.seq < b.seq
}

// TestAgainstSortedSlice: random pushes, pops and removals from anywhere,
// checked after every step against a sorted slice, the simple reference;
// every element's index must be where it is, and -1 once it has left.
func TestAgainstSortedSlice(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 0))
		h := New(less, func(x *item, i int) { x.index = i })
		var ref []*item
		var gone []*item
		for step := range 400 {
			switch op := r.IntN(10); {
			case op < 5 || len(ref) == 0:
				x := &item{key: r.IntN(20), seq: step}
				h.Push(x)
				ref = append(ref, x)
				slices.SortFunc(ref, func(a, b *item) int {
					if less(a, b) {
						return -1
					}
					return 1
				})
			case op < 7:
				got := h.Pop()
				if got != ref[0] {
					t.Fatalf("seed %d step %d: Pop = %+v, want %+v", seed, step, *got, *ref[0])
				}
				gone, ref = append(gone, got), ref[1:]
			default:
				x := ref[r.IntN(len(ref))]
				if got := h.Remove(x.index); got != x {
					t.Fatalf("seed %d step %d: Remove(%d) = %+v, want %+v", seed, step, x.index, *got, *x)
				}
				gone = append(gone, x)
				ref = slices.DeleteFunc(ref, func(y *item) bool { return y == x })
			}
			if h.Len() != len(ref) {
				t.Fatalf("seed %d step %d: Len = %d, want %d", seed, step, h.Len(), len(ref))
			}
			if len(ref) > 0 && h.Min() != ref[0] {
				t.Fatalf("seed %d step %d: Min = %+v, want %+v", seed, step, *h.Min(), *ref[0])
			}
			for i, x := range h.items {
				if x.index != i {
					t.Fatalf("seed %d step %d: element at %d says index %d", seed, step, i, x.index)
				}
			}
			for _, x := range gone {
				if x.index != -1 {
					t.Fatalf("seed %d step %d: an element that left says index %d", seed, step, x.index)
				}
			}
		}
	}
}
