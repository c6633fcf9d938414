package heap_test

import (
	"fmt"

	"github.com/afloat/afloat/internal/heap"
)

type job struct {
	name  string
	due   int
	index int // in the heap, -1 once out
}

// Jobs by due time; one is cancelled from the middle of the heap.
func Example() {
	h := heap.New(func(a, b *job) bool { return a.due < b.due }, func(j *job, i int) { j.index = i })
	jobs := []*job{{name: "backup", due: 30}, {name: "report", due: 10}, {name: "rotate", due: 20}}
	for _, j := range jobs {
		h.Push(j)
	}
	cancelled := h.Remove(jobs[2].index)
	fmt.Println("cancelled", cancelled.name, cancelled.index)
	for h.Len() > 0 {
		fmt.Println(h.Pop().name)
	}
	// Output:
	// cancelled rotate -1
	// report
	// backup
}
