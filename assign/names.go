package assign

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of a call's arguments that a caller may want to check first (a
// command line, a form): each call refuses what is outside its range with
// ErrInvalid, naming the range, and its documentation gives the rest.
const (
	MaxMembers     = 10000 // members per call of Add, Remove, Restore, …
	MaxMemberName  = 512   // bytes of a member's name, UTF-8
	MaxBatch       = 10000 // picks per PickBatch and PickBatchIDs
	MaxConcurrency = 1_000_000
	MinLeaseTTL    = time.Millisecond
	MaxLeaseTTL    = 24 * time.Hour
)

const (
	maxPoolName  = 100
	maxRequestID = 200
	// pickChunk is how many picks of a batch one script makes: 256 picks
	// hold the server for about a quarter of a millisecond.
	pickChunk = 256
	// maxCount is the largest count a member can be given: scores are
	// doubles, exact for integers up to 2^53.
	maxCount = 1 << 53
)

// checkPoolName refuses names that are empty, too long, or would break the
// hash tag: the name goes inside {…} so that every key of a pool lands in
// one Redis Cluster slot and its scripts can run there.
func checkPoolName(name string) error {
	if name == "" || len(name) > maxPoolName {
		return fmt.Errorf("%w: pool name %q: want 1 to %d characters", ErrInvalid, clip(name), maxPoolName)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:", r)) {
			return fmt.Errorf("%w: pool name %q: want letters, digits and - _ . : only", ErrInvalid, clip(name))
		}
	}
	return nil
}

func checkMembers(op string, members []string) error {
	if len(members) == 0 || len(members) > MaxMembers {
		return fmt.Errorf("%w: %s: %d members: want 1 to %d", ErrInvalid, op, len(members), MaxMembers)
	}
	seen := make(map[string]bool, len(members))
	for _, m := range members {
		if problem := memberProblem(m); problem != "" {
			return fmt.Errorf("%w: %s: %s", ErrInvalid, op, problem)
		}
		if seen[m] {
			return fmt.Errorf("%w: %s: member %q given twice", ErrInvalid, op, clip(m))
		}
		seen[m] = true
	}
	return nil
}

// checkMember refuses empty, overlong, non-UTF-8 names and control
// characters, which would make the pool unreadable on a terminal.
func checkMember(m string) error {
	if problem := memberProblem(m); problem != "" {
		return fmt.Errorf("%w: %s", ErrInvalid, problem)
	}
	return nil
}

func memberProblem(m string) string {
	if m == "" || len(m) > MaxMemberName || !utf8.ValidString(m) {
		return fmt.Sprintf("member name %q: want 1 to %d bytes of UTF-8", clip(m), MaxMemberName)
	}
	for _, r := range m {
		if r < ' ' || r == 0x7f {
			return fmt.Sprintf("member name %q: control characters are not allowed", clip(m))
		}
	}
	return ""
}

func checkRequestID(id string) error {
	if id == "" || len(id) > maxRequestID || !utf8.ValidString(id) {
		return fmt.Errorf("%w: request id %q: want 1 to %d bytes of UTF-8", ErrInvalid, clip(id), maxRequestID)
	}
	return nil
}

func checkCount(field string, n int64) error {
	if n < 0 || n > maxCount {
		return fmt.Errorf("%w: %s %d: want an integer from 0 to %d", ErrInvalid, field, n, int64(maxCount))
	}
	return nil
}

func checkDuration(field string, d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return fmt.Errorf("%w: %s %v: want %v to %v", ErrInvalid, field, d, lo, hi)
	}
	return nil
}

// clip shortens a value quoted in an error message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// CheckPoolName reports whether name can name a pool — 1 to 100 letters,
// digits and - _ . : (no braces: the name is the hash tag of the pool's
// keys) — so that a configuration can be refused before anything connects.
func CheckPoolName(name string) error { return checkPoolName(name) }
