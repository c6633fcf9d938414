package heap

import (
	stdheap "container/heap"
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

// TestAgainstSortedSlice: random pushes, pops, changed keys and removals
// from anywhere,
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
			case op < 6:
				got := h.Pop()
				if got != ref[0] {
					t.Fatalf("seed %d step %d: Pop = %+v, want %+v", seed, step, *got, *ref[0])
				}
				gone, ref = append(gone, got), ref[1:]
			case op < 8:
				x := ref[r.IntN(len(ref))]
				x.key = r.IntN(20)
				h.Fix(x.index)
				slices.SortFunc(ref, func(a, b *item) int {
					if less(a, b) {
						return -1
					}
					return 1
				})
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

// ref is container/heap's view of a slice of items, by key alone: equal
// keys are ties that only the order of the heap's steps breaks.
type ref []*item

func (r ref) Len() int           { return len(r) }
func (r ref) Less(i, j int) bool { return r[i].key < r[j].key }
func (r ref) Swap(i, j int)      { r[i], r[j] = r[j], r[i] }
func (r *ref) Push(x any)        { *r = append(*r, x.(*item)) }
func (r *ref) Pop() any {
	old := *r
	x := old[len(old)-1]
	*r = old[:len(old)-1]
	return x
}

// TestSameStepsAsContainerHeap: with keys that tie often and nothing to
// break the ties, random pushes, pops, changed keys and removals leave
// every element where container/heap leaves it, step for step — so that
// a simulation moved from one to the other pops its ties as it did and
// replays byte for byte. Elements without an index (setIndex nil) too.
func TestSameStepsAsContainerHeap(t *testing.T) {
	for _, indexed := range []bool{true, false} {
		for seed := uint64(1); seed <= 50; seed++ {
			r := rand.New(rand.NewPCG(seed, 1))
			setIndex := func(x *item, i int) { x.index = i }
			if !indexed {
				setIndex = nil
			}
			h := New(func(a, b *item) bool { return a.key < b.key }, setIndex)
			var std ref
			for step := range 600 {
				switch op := r.IntN(10); {
				case op < 5 || len(std) == 0:
					x := &item{key: r.IntN(4), seq: step}
					h.Push(x)
					stdheap.Push(&std, x)
				case op < 7 || !indexed:
					if got, want := h.Pop(), stdheap.Pop(&std).(*item); got != want {
						t.Fatalf("indexed %v seed %d step %d: Pop = %+v, want %+v", indexed, seed, step, *got, *want)
					}
				case op < 8:
					i := r.IntN(len(std))
					std[i].key = r.IntN(4)
					h.Fix(i)
					stdheap.Fix(&std, i)
				default:
					i := r.IntN(len(std))
					if got, want := h.Remove(i), stdheap.Remove(&std, i).(*item); got != want {
						t.Fatalf("indexed %v seed %d step %d: Remove(%d) = %+v, want %+v", indexed, seed, step, i, *got, *want)
					}
				}
				if !slices.Equal(h.items, std) {
					t.Fatalf("indexed %v seed %d step %d: the heap's order differs from container/heap's", indexed, seed, step)
				}
			}
		}
	}
}
