package assign

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of names and durations.
const (
	MaxPoolName   = 100
	MaxMemberName = 512
	MaxRequestID  = 200
	MaxMembers    = 10000 // members per call of Add, Remove, Restore
	MaxBatch      = 10000 // picks per PickBatch
	// PickChunk is how many picks of a batch one script makes: 256 picks
	// hold the server for about a quarter of a millisecond.
	PickChunk = 256
	// MaxCount is the largest count a member can be given: scores are
	// doubles, exact for integers up to 2^53.
	MaxCount = 1 << 53
)

// checkPoolName refuses names that are empty, too long, or would break the
// hash tag: the name goes inside {…} so that every key of a pool lands in
// one Redis Cluster slot and its scripts can run there.
func checkPoolName(name string) error {
	if name == "" || len(name) > MaxPoolName {
		return fmt.Errorf("%w: pool name %q: want 1 to %d characters", ErrInvalid, clip(name), MaxPoolName)
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
	if id == "" || len(id) > MaxRequestID || !utf8.ValidString(id) {
		return fmt.Errorf("%w: request id %q: want 1 to %d bytes of UTF-8", ErrInvalid, clip(id), MaxRequestID)
	}
	return nil
}

func checkCount(field string, n int64) error {
	if n < 0 || n > MaxCount {
		return fmt.Errorf("%w: %s %d: want an integer from 0 to %d", ErrInvalid, field, n, int64(MaxCount))
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

// CheckPoolName reports whether name can name a pool, so that a command
// line can be refused before anything connects.
func CheckPoolName(name string) error { return checkPoolName(name) }
