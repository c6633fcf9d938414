package assign

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Errors of the pool, the least-in-flight leases and the proxy pool. Test
// for them with errors.Is; each is wrapped with the operation and the pool
// it concerns.
var (
	// ErrPoolEmpty: the pool exists but has no eligible member. Nothing
	// was counted; the caller must not make its request (the proxy pool's
	// ProxyFunc fails the request before any dial).
	ErrPoolEmpty = errors.New("assign: pool is empty")
	// ErrUnknownPool: no pool of that name has ever had a member on this
	// Redis (or it was deleted).
	ErrUnknownPool = errors.New("assign: unknown pool")
	// ErrUnknownMember: remove named a member that is not active, or
	// restore one that is not removed. Nothing was changed.
	ErrUnknownMember = errors.New("assign: unknown member")
	// ErrAmbiguous: the connection was lost after the command may have
	// been sent, so the pick (or lease) may or may not have been counted.
	// Do not retry blindly: retry with the same request id (PickID), which
	// returns the member of the first attempt if it ran, or accept that the
	// count may be one higher than the picks you saw.
	ErrAmbiguous = errors.New("assign: outcome unknown: the connection was lost after the command was sent")
	// ErrInvalid: an argument outside its allowed range (a pool or member
	// name, a count, a duration, a URL). The message names the field.
	ErrInvalid = errors.New("assign: invalid argument")
	// ErrNotOwner: Reset on a pool that the given creator did not make
	// with Create. Nothing was changed.
	ErrNotOwner = errors.New("assign: not the pool's creator")
	// ErrAllCooling: every member of the pool is cooling down (or out of
	// room: a rate limit, a concurrency cap) and the pool's last resort is
	// LastResortFail, or the call is a PickLease. Nothing was counted. The error
	// is a *CoolingError, which carries the earliest time a member comes
	// back, and it matches ErrPoolEmpty too: no member is eligible.
	ErrAllCooling = errors.New("assign: every member is cooling down")
)

// CoolingError is the refusal of a pick when every member is cooling
// down or full: Until is when the first of them comes back, by Redis's clock, so
// that a caller can wait or answer Retry-After. It matches ErrAllCooling
// and ErrPoolEmpty.
type CoolingError struct {
	Op, Pool string
	Until    time.Time
}

func (e *CoolingError) Error() string {
	return fmt.Sprintf("assign: %s on pool %q: every member is cooling down; the first comes back at %s",
		e.Op, e.Pool, e.Until.UTC().Format(time.RFC3339Nano))
}

// Is makes the refusal match ErrAllCooling and ErrPoolEmpty.
func (e *CoolingError) Is(target error) bool {
	return target == ErrAllCooling || target == ErrPoolEmpty
}

// ambiguous is an outcome that may or may not have happened: it matches
// ErrAmbiguous and unwraps to the network error.
type ambiguous struct {
	op    string
	cause error
}

func (e *ambiguous) Error() string {
	return fmt.Sprintf("assign: %s: outcome unknown (the connection was lost after the command was sent; retry with the same request id to find out): %v", e.op, e.cause)
}

func (e *ambiguous) Is(target error) bool { return target == ErrAmbiguous }
func (e *ambiguous) Unwrap() error        { return e.cause }

// classify turns a client error into the package's errors. A Redis error
// reply means the command ran to a definite refusal; a dial error means
// nothing was sent; anything else (a connection reset, EOF, a timeout or a
// cancelled context while the command was in flight) is ambiguous.
func classify(op, pool string, err error) error {
	if err == nil {
		return nil
	}
	if err == errNil {
		return fmt.Errorf("%w: %q (%s)", ErrPoolEmpty, pool, op)
	}
	if re, ok := err.(replyError); ok {
		// A server may put its generic code before the script's own (the
		// in-process demo server does, to a RESP3 client).
		msg := strings.TrimPrefix(string(re), "ERR ")
		switch {
		case msg == "AFLOAT_UNKNOWN_POOL":
			return fmt.Errorf("%w %q (%s): add a member first", ErrUnknownPool, pool, op)
		case strings.HasPrefix(msg, "AFLOAT_NOT_ACTIVE "):
			return fmt.Errorf("%w: %s: %q is not an active member of pool %q; nothing was changed", ErrUnknownMember, op, strings.TrimPrefix(msg, "AFLOAT_NOT_ACTIVE "), pool)
		case msg == "AFLOAT_NOT_OWNER":
			return fmt.Errorf("%w: %s: pool %q was not made by this creator with Create; nothing was changed", ErrNotOwner, op, pool)
		case strings.HasPrefix(msg, "AFLOAT_COOLING "):
			if ms, err := strconv.ParseInt(strings.TrimPrefix(msg, "AFLOAT_COOLING "), 10, 64); err == nil {
				return &CoolingError{Op: op, Pool: pool, Until: time.UnixMilli(ms)}
			}
		case strings.HasPrefix(msg, "AFLOAT_NOT_MEMBER "):
			return fmt.Errorf("%w: %s: %q is not a member of pool %q, active, cooling or removed; nothing was changed", ErrUnknownMember, op, strings.TrimPrefix(msg, "AFLOAT_NOT_MEMBER "), pool)
		case strings.HasPrefix(msg, "AFLOAT_NOT_REMOVED "):
			return fmt.Errorf("%w: %s: %q is not a removed member of pool %q; nothing was changed", ErrUnknownMember, op, strings.TrimPrefix(msg, "AFLOAT_NOT_REMOVED "), pool)
		}
		return fmt.Errorf("assign: %s on pool %q: redis: %w", op, pool, err)
	}
	var ne *net.OpError
	var un *unsent
	if errors.As(err, &ne) && ne.Op == "dial" || errors.As(err, &un) {
		return fmt.Errorf("assign: %s on pool %q: redis unreachable, nothing sent: %w", op, pool, err)
	}
	return &ambiguous{op: op + " on pool " + fmt.Sprintf("%q", pool), cause: err}
}

// notStarted returns ctx's error if it ended before anything was sent.
func notStarted(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("assign: not sent: %w", err)
	}
	return nil
}
