package breakage

// Set is a set of deliberate faults; the zero value is none.
type Set struct {
	// RenewRefills: a region fills its bucket to the new burst on every
	// renewal, creating a burst out of nothing each time.
	RenewRefills bool
	// ReuseBeforeConfirm: the coordinator stops counting a region's old
	// lease as soon as it grants the replacement, not when the region
	// confirms it or the old one expires, and gives the difference away.
	ReuseBeforeConfirm bool
	// NoFencing: the ledger accepts writes from a coordinator whose epoch
	// has been superseded, so a paused coordinator that wakes up keeps
	// granting beside its successor.
	NoFencing bool
	// FullToEvery: the coordinator grants every region the whole R and B.
	FullToEvery bool
	// CachesOverBurst: a region's token caches hold tokens on top of a
	// full bucket (its shared word keeps the whole burst as capacity).
	CachesOverBurst bool
	// NoIncarnations: the coordinator fences no agent incarnations: every
	// attach succeeds, and renewals and returns are taken whatever
	// incarnation they carry, so two agents of one region spend at once.
	NoIncarnations bool
	// NoRestoreFence: a coordinator that restores a ledger from a backup
	// grants at once, counting only the backup's leases, beside leases
	// granted after the backup that regions still spend.
	NoRestoreFence bool
	// NoLeaderProof: the coordinator answers without a write — covered
	// and unchanged leases — with no proof that it still leads, so a
	// leader paused while a successor took over, once woken, grants
	// leases its successor never counts.
	NoLeaderProof bool
}

// Any says whether any fault is set.
func (s Set) Any() bool { return s != Set{} }
