// Package heap is a binary min-heap whose elements know their place in it,
// so that any of them can be removed in O(log n), not only the least: the
// bulkhead's queue takes out a waiter whose context ended, and the virtual
// clock a stopped timer. container/heap does the same through an interface
// of five methods that every user writes again, with its elements boxed in
// any; this is that code once, typed, taking the same steps, so that ties
// (equal keys) leave in the same order. Elements that only ever leave from
// the top, such as a simulation's events held by value, need no index:
// their setIndex is nil.
//
//	h := heap.New(func(a, b *timer) bool { return a.at.Before(b.at) },
//		func(t *timer, i int) { t.index = i })
//	h.Push(t)
//	h.Remove(t.index) // t.index is -1 once t has left
//	u.at = later; h.Fix(u.index)
//	next := h.Pop()
//
// A Heap is not safe for concurrent use; its owner's lock guards it.
package heap
