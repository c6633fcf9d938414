package heap

// Heap is a min-heap of T by less. Each element is told its index when it
// moves (setIndex), and -1 when it leaves.
type Heap[T any] struct {
	items    []T
	less     func(a, b T) bool
	setIndex func(x T, i int)
}

// New returns an empty heap ordered by less (the least first), which
// tells each element its index through setIndex.
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
	i := len(h.items) - 1
	h.setIndex(x, i)
	h.up(i)
}

// Pop removes and returns the least element. The heap must not be empty.
func (h *Heap[T]) Pop() T { return h.Remove(0) }

// Remove removes and returns the element at index i, as setIndex gave it.
func (h *Heap[T]) Remove(i int) T {
	x := h.items[i]
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	var zero T
	h.items[last] = zero // no reference kept to what left
	h.items = h.items[:last]
	if i != last && !h.down(i) {
		h.up(i)
	}
	h.setIndex(x, -1)
	return x
}

func (h *Heap[T]) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.setIndex(h.items[i], i)
	h.setIndex(h.items[j], j)
}

func (h *Heap[T]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(h.items[i], h.items[parent]) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

// down moves the element at i down to its place and reports whether it
// moved.
func (h *Heap[T]) down(i int) bool {
	start := i
	n := len(h.items)
	for {
		least := 2*i + 1
		if least >= n {
			break
		}
		if right := least + 1; right < n && h.less(h.items[right], h.items[least]) {
			least = right
		}
		if !h.less(h.items[least], h.items[i]) {
			break
		}
		h.swap(i, least)
		i = least
	}
	return i > start
}
