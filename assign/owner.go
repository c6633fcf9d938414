package assign

import (
	"context"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/afloat/afloat/assign/internal/lua"
)

// maxOwner is the longest creator name Create records.
const maxOwner = 200

// A pool's creator is a name recorded beside its keys
// (afloat:assign:{name}:owner) by Create, in the same step as its first
// members. It lets a program that makes pools for itself — the console's
// assignment lab — tell its own pool from one that others keep on the
// same Redis, and change or reset only its own: a pool made by Add (by
// any worker), or one that holds only failure records, has no creator.

// Create makes the pool with members at count and records owner as its
// creator, in one atomic step, if nothing of the pool is on the Redis: no
// member, active or removed, no failure record, no creator. It reports
// whether it made the pool; when it did not, it changed nothing. Status
// says who made a pool (Status.Owner).
func (p *Pool) Create(ctx context.Context, owner string, count int64, members ...string) (bool, error) {
	if err := checkOwnerCall("create", owner, count, members); err != nil {
		return false, err
	}
	v, err := p.r.run(ctx, lua.Create, p.ownerKeys(), p.ownerArgs(owner, count, members)).AsInt64()
	if err != nil {
		return false, classify("create", p.name, err)
	}
	return v == 1, nil
}

// Reset empties the pool — members, removed members, failure records —
// and refills it with members at count, in one atomic step, if owner is
// its creator (Create recorded it); otherwise it returns ErrNotOwner and
// changes nothing. The creator stays recorded.
func (p *Pool) Reset(ctx context.Context, owner string, count int64, members ...string) error {
	if err := checkOwnerCall("reset", owner, count, members); err != nil {
		return err
	}
	_, err := p.r.run(ctx, lua.Reset, p.ownerKeys(), p.ownerArgs(owner, count, members)).AsInt64()
	return classify("reset", p.name, err)
}

func (p *Pool) ownerKeys() []string {
	return []string{p.k.Active, p.k.Removed, p.k.Failures, p.k.Owner, p.k.Cooling, p.k.Meta, p.k.Streaks, p.k.PoolLeases, p.k.PoolLeaseIndex}
}

func (p *Pool) ownerArgs(owner string, count int64, members []string) []string {
	return append([]string{owner, strconv.FormatInt(count, 10)}, members...)
}

func checkOwnerCall(op, owner string, count int64, members []string) error {
	if owner == "" || len(owner) > maxOwner || !utf8.ValidString(owner) {
		return fmt.Errorf("%w: %s: owner %q: want 1 to %d bytes of UTF-8", ErrInvalid, op, clip(owner), maxOwner)
	}
	if err := checkCount("count", count); err != nil {
		return err
	}
	return checkMembers(op, members)
}
