package bulkhead_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/afloat/afloat/bulkhead"
)

func Example() {
	b, _ := bulkhead.New(2) // two inside, no queue
	ctx := context.Background()
	p1, _ := b.Acquire(ctx)
	p2, _ := b.Acquire(ctx)
	_, err := b.Acquire(ctx)
	fmt.Println(errors.Is(err, bulkhead.ErrRejected), bulkhead.ReasonOf(err))
	p1.Release()
	p2.Release()
	st := b.Stats()
	fmt.Println(st.Admitted, st.Completed, st.Rejected[bulkhead.ReasonQueueFull])
	// Output:
	// true queue_full
	// 2 2 1
}
