package heap

// Heap is a min-heap of T by less. Each element is told its index when it
// moves (setIndex), and -1 when it leaves.
//
// The order it keeps is container/heap's, step for step: the same
// comparisons in the same order, so that a simulation moved from one to the
// other pops its ties in the same order and replays as it did.
type Heap[T any] struct {
	items    []T
	less     func(a, b T) bool
	setIndex func(x T, i int)
}

// New returns an empty heap ordered by less (the least first), which
// tells each element its index through setIndex. setIndex may be nil when
// elements never leave but from the top, nor change their key in place:
// values, not pointers, such as events of a simulation.
func New[T any](less func(a, b T) bool, setIndex func(x T, i int)) Heap[T] {
	return Heap[T]{less: less, setIndex: setIndex}
}

// Len returns the number of elements.
func (h *Heap[T]) Len() int { return len(h.items) }

// Min returns the least element without removing it. The heap must not be
// empty.
func (h *Heap[T]) Min() T { return h.items[0] }

// Push adds x.
func (h *Heap[T]) Push(x T) {
	h.items = append(h.items, x)
	h.up(len(h.items)-1, x)
}

// Pop removes and returns the least element. The heap must not be empty.
func (h *Heap[T]) Pop() T { return h.Remove(0) }

// Remove removes and returns the element at index i, as setIndex gave it.
func (h *Heap[T]) Remove(i int) T {
	x := h.items[i]
	last := len(h.items) - 1
	moved := h.items[last]
	var zero T
	h.items[last] = zero // no reference kept to what left
	h.items = h.items[:last]
	if i != last {
		// The last element takes the hole, then finds its place.
		if !h.down(i, moved) {
			h.up(i, moved)
		}
	}
	h.place(x, -1)
	return x
}

// Fix restores the order after the element at index i changed its key;
// cheaper than Remove then Push.
func (h *Heap[T]) Fix(i int) {
	x := h.items[i]
	if !h.down(i, x) {
		h.up(i, x)
	}
}

// place puts x at index i, or tells it it left (i = -1).
func (h *Heap[T]) place(x T, i int) {
	if i >= 0 {
		h.items[i] = x
	}
	if h.setIndex != nil {
		h.setIndex(x, i)
	}
}

// up moves x, meant for the hole at i, up to its place: parents that are
// not greater move down into the hole instead of being swapped with it,
// one write each.
func (h *Heap[T]) up(i int, x T) {
	for i > 0 {
		parent := (i - 1) / 2
		p := h.items[parent]
		if !h.less(x, p) {
			break
		}
		h.place(p, i)
		i = parent
	}
	h.place(x, i)
}

// down moves x, meant for the hole at i, down to its place and reports
// whether it moved. Of two equal children the left one rises, as in
// container/heap.
func (h *Heap[T]) down(i int, x T) bool {
	start := i
	n := len(h.items)
	for {
		least := 2*i + 1
		if least >= n || least < 0 { // least < 0: int overflow
			break
		}
		if right := least + 1; right < n && h.less(h.items[right], h.items[least]) {
			least = right
		}
		c := h.items[least]
		if !h.less(c, x) {
			break
		}
		h.place(c, i)
		i = least
	}
	h.place(x, i)
	return i > start
}
