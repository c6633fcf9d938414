package region

import (
	"context"
	"fmt"
	"time"
)

// Wait decides a request of cost tokens of tenant's quota as Decide does
// and, while it is refused, sleeps for the refusal's RetryAfter and
// decides again — until it is admitted (the Decision, nil), ctx ends
// (ctx's error), or waiting cannot help: a tenant not served
// (quota.ErrUnknownTenant) or a cost the quota can never hold (ErrTooLarge)
// fail at once, as Decision.Err says.
//
// It is x/time/rate's Wait as far as a region can promise one, and no
// further:
//
//   - It reserves nothing. A refusal's RetryAfter is when the tokens come
//     under the lease in use, or, without a lease, when the region next
//     asks the coordinator; whoever decides first when they come takes
//     them, so waiters are not served in order, and a waiter may wait
//     again. A reservation (x/time/rate's Reserve) would spend tokens the
//     region does not hold yet: the next lease may carry a smaller share,
//     or none, when another region's demand grows. So there is no Reserve.
//   - It gives up at once, with an error that wraps
//     context.DeadlineExceeded, when ctx's deadline falls before a
//     promised RetryAfter (RetryKnown): it does not sleep in vain. A wait
//     for the coordinator is no promise, so it sleeps until the deadline.
//   - Every try is a decision and counts as one (Counts, the metrics): a
//     refusal before the admission shows, as it should, as demand the
//     lease did not meet — it is also what makes the region ask the
//     coordinator for more.
//
// Safe for concurrent use.
func (l *Limiter) Wait(ctx context.Context, tenant string, cost int64) (Decision, error) {
	for {
		if err := ctx.Err(); err != nil {
			return Decision{}, err
		}
		d := l.Decide(tenant, cost)
		if d.Allowed {
			return d, nil
		}
		if err := d.Err(); err != nil {
			return d, err
		}
		// A refusal always carries a RetryAfter; the floor keeps a wait
		// that rounds to 0 from spinning.
		wait := max(d.RetryAfter, time.Millisecond)
		if dl, ok := ctx.Deadline(); ok && d.RetryKnown && time.Until(dl) < wait {
			return d, fmt.Errorf("region: %d tokens of tenant %q's quota come in %v, after the context's deadline: %w",
				cost, tenant, wait, context.DeadlineExceeded)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return d, ctx.Err()
		case <-t.C:
		}
	}
}
