package bulkhead

import (
	"context"
)

// Priority is a request's tier: when permits are scarce, higher tiers are
// admitted first and may take a lower tier's place in a full queue.
type Priority int

// The tiers, lowest first. Acquire uses PriorityNormal unless the context
// carries another (WithPriority).
const (
	PriorityLow Priority = iota
	PriorityNormal
	PriorityHigh
	PriorityCritical
	numPriorities
)

type priorityKey struct{}

// WithPriority returns a context that carries a request's priority to
// Acquire and to the HTTP middleware.
func WithPriority(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityFrom returns the priority a context carries, PriorityNormal if
// none.
func PriorityFrom(ctx context.Context) Priority {
	if p, ok := ctx.Value(priorityKey{}).(Priority); ok && p >= 0 && p < numPriorities {
		return p
	}
	return PriorityNormal
}
