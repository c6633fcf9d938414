package bulkhead

import "errors"

// Errors of Acquire, Submit and New. A refusal wraps ErrRejected and one
// of the reasons below, so callers can test for either with errors.Is.
var (
	// ErrRejected is wrapped by every refusal of a permit.
	ErrRejected = errors.New("bulkhead: rejected")
	// ErrQueueFull: the limit is reached and the queue is full.
	ErrQueueFull = errors.New("bulkhead: queue full")
	// ErrMaxWait: the request waited in the queue for the longest wait
	// allowed, or would have, going by the queue's current speed.
	ErrMaxWait = errors.New("bulkhead: maximum queue wait exceeded")
	// ErrDeadline: the request's deadline passed in the queue, or cannot
	// be met going by the queue's current speed, so it was refused before
	// it waited.
	ErrDeadline = errors.New("bulkhead: deadline cannot be met")
	// ErrEvicted: a request of a higher priority took this one's place in
	// a full queue.
	ErrEvicted = errors.New("bulkhead: evicted by a higher priority")
	// ErrCanceled: the caller's context was already done when Acquire was
	// called, or ended while the request waited.
	ErrCanceled = errors.New("bulkhead: canceled while waiting")
	// ErrConfig: New or SetLimit got a value outside its range.
	ErrConfig = errors.New("bulkhead: invalid configuration")
)

// Reason names a refusal in metrics: "queue_full", "max_wait",
// "deadline", "evicted" or "canceled".
type Reason string

// The refusal reasons, in the order Stats reports them.
const (
	ReasonQueueFull Reason = "queue_full"
	ReasonMaxWait   Reason = "max_wait"
	ReasonDeadline  Reason = "deadline"
	ReasonEvicted   Reason = "evicted"
	ReasonCanceled  Reason = "canceled"
)

var reasons = [...]Reason{ReasonQueueFull, ReasonMaxWait, ReasonDeadline, ReasonEvicted, ReasonCanceled}

// Indexes of the reasons, for the counters.
const (
	rQueueFull = iota
	rMaxWait
	rDeadline
	rEvicted
	rCanceled
)

var reasonErrors = [...]error{ErrQueueFull, ErrMaxWait, ErrDeadline, ErrEvicted, ErrCanceled}

// rejection is a refusal: it matches ErrRejected, its reason's sentinel
// and, for a canceled wait, the context's error.
type rejection struct {
	reason int   // index into reasons
	cause  error // the context's error, for ReasonCanceled
}

func (r *rejection) Error() string {
	if r.cause != nil {
		return reasonErrors[r.reason].Error() + ": " + r.cause.Error()
	}
	return reasonErrors[r.reason].Error()
}

func (r *rejection) Is(target error) bool {
	return target == ErrRejected || target == reasonErrors[r.reason]
}

func (r *rejection) Unwrap() error { return r.cause }

// ReasonOf returns the reason of a refusal, or "" for another error.
func ReasonOf(err error) Reason {
	var r *rejection
	if errors.As(err, &r) {
		return reasons[r.reason]
	}
	return ""
}

// Shared refusals: they carry no per-call data, so the paths that refuse
// do not allocate.
var (
	rejectQueueFull = &rejection{reason: rQueueFull}
	rejectMaxWait   = &rejection{reason: rMaxWait}
	rejectDeadline  = &rejection{reason: rDeadline}
	rejectEvicted   = &rejection{reason: rEvicted}
)
