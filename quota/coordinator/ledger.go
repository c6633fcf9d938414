package coordinator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/afloat/afloat/quota"
)

// Ledger is the coordinator's durable state: the leases it has granted
// and not yet seen end, each tenant's credit (returned tokens waiting
// to be moved), the tenants, and each region's agent incarnation. A grant
// is written here before it is sent, so that a successor that restores
// the ledger keeps counting it, and an attach before it is answered, so
// that a successor enforces it.
//
// Fencing lives here, not in the coordinator: Fence makes the caller the
// only writer by raising the epoch, and Commit refuses a write from any
// older epoch. A coordinator that was paused and wakes up cannot grant
// beside its successor, because it cannot write.
type Ledger interface {
	// Fence raises the epoch and returns it with the ledger's contents.
	Fence(ctx context.Context) (Snapshot, error)
	// Commit applies ops atomically if epoch is still the ledger's epoch,
	// and fails with quota.ErrStaleEpoch otherwise, applying nothing.
	// An error wrapping ErrOutcomeUnknown says the write may have been
	// applied all the same (its context ended, or the connection was
	// lost, after it was sent); Resolve tells which, and the ledger takes
	// no other write until it has. Any other error: nothing was applied.
	Commit(ctx context.Context, epoch uint64, ops ...Op) error
	// Resolve settles the newest Commit at epoch, which failed with
	// ErrOutcomeUnknown, by reading the ledger back under the same fence:
	// it reports whether that write was applied, and once it has
	// answered, the write can no longer be applied later. It fails with
	// quota.ErrStaleEpoch if epoch is no longer the ledger's, and with an
	// error wrapping ErrOutcomeUnknown if it could not tell (call it
	// again). With no write of unknown outcome it reports false.
	Resolve(ctx context.Context, epoch uint64) (applied bool, err error)
	// Proof is the newest proof the ledger holds that its writer at
	// epoch leads: the ledger was asked at sent, on this process's clock,
	// and answered that no successor can lead before until (until may be
	// sent itself: a proof of that instant only). Zero times when it has
	// none. now is the caller's reading of the clock: a ledger that can
	// tell at once (in memory) proves that instant. A coordinator answers a call without a write — a covered or
	// unchanged lease, a return that ends only covered leases — only when
	// the call was taken at or before sent, or before until (Core.Led):
	// a write proves leadership as it lands, an answer without one needs
	// this instead, or a paused leader that wakes up answers beside its
	// successor.
	Proof(epoch uint64, now time.Time) (sent, until time.Time)
	// Confirm asks the ledger now whether epoch still leads, and returns
	// once it has answered: nil if it does (Proof then holds a proof sent
	// no earlier than the call), an error wrapping quota.ErrStaleEpoch if
	// it does not, another error if it cannot tell.
	Confirm(ctx context.Context, epoch uint64) error
}

// ErrTxnTooLarge: the ledger refused a write for its size — more
// operations, or more bytes, than one transaction may hold (etcd's
// --max-txn-ops, 128 by default, and --max-request-bytes) — and applied
// nothing. Server splits the write smaller and writes it again; it never
// writes the refused transaction again as it was.
var ErrTxnTooLarge = errors.New("coordinator: ledger transaction too large")

// ErrOutcomeUnknown: a ledger write may or may not have been applied —
// an etcd transaction whose context was cancelled, or whose connection
// was lost, after it was sent may have committed. Guessing either way is
// wrong: taken as failed, a committed return's tokens are granted again
// by a successor with no line of the return in the log; taken as done,
// a grant that was never written is sent. Server resolves it, in one
// place (Ledger.Resolve), before anything depends on the write.
var ErrOutcomeUnknown = errors.New("coordinator: ledger write outcome unknown")

// Snapshot is the ledger's contents.
type Snapshot struct {
	Epoch  uint64
	NextID uint64 // above every lease ID ever written
	Leases []quota.Lease
	Credit map[string]quota.Micro // by tenant
	// Tenants are the tenants the ledger holds, by name; Seeded says
	// whether a config file has seeded it (Config.Tenants).
	Tenants []TenantRecord
	Seeded  bool
	// Holders are the regions' agent incarnations (Core.Attach).
	Holders []Holder
	// Restored is set when the ledger was restored from a backup and no
	// coordinator has since waited out the leases the backup may lack
	// (restore.go); nil otherwise.
	Restored *Restored
}

// Holder is the agent incarnation that holds a region, as the ledger
// keeps it: only it may renew and return the region's leases.
// Incarnation 0 records a region whose agent detached: no one holds it,
// and a caller that never attached (incarnation 0) stays refused, as it
// is from a region's first attach on.
type Holder struct {
	Region      string `json:"region"`
	Incarnation uint64 `json:"incarnation"`
	// Agent is how the agent described itself, and when it attached.
	Agent string `json:"agent"`
}

// OpKind is what an Op does.
type OpKind int

const (
	// PutLease records a granted lease.
	PutLease OpKind = iota
	// EndLease forgets a lease that has ended (returned, superseded or
	// expired). Ending an unknown lease does nothing.
	EndLease
	// SetCredit sets Tenant's credit to Credit. Values, not deltas:
	// writing an op twice leaves the ledger as writing it once.
	SetCredit
	// PutTenant writes Record, the tenant named Tenant.
	PutTenant
	// DeleteTenant deletes the tenant named Tenant.
	DeleteTenant
	// MarkSeeded records that the config file's tenants were written:
	// from then on the ledger's tenants are the truth.
	MarkSeeded
	// PutHolder records Holder, the region's agent incarnation.
	PutHolder
	// ClearRestored removes the mark of a restore (Snapshot.Restored):
	// the coordinator that writes it has waited out every lease the
	// backup may lack.
	ClearRestored
	// ReserveIDs raises the ledger's next lease ID to ID at least, so
	// that a successor hands out none below it: the IDs of the leases
	// the coordinator grants without writing them (cover.go).
	ReserveIDs
)

// Op is one change to the ledger. The fields only one kind uses are
// pointers, nil in every other kind: a coordinator holds hundreds of
// thousands of ops at once after a region's agents restart (the ends of
// their leases, waiting for the background's turn), and an op that
// carried a lease, a tenant record and a holder inline was 296 bytes
// whatever its kind; it is 64.
type Op struct {
	Kind   OpKind
	ID     uint64        // EndLease; ReserveIDs: the next ID
	Tenant string        // SetCredit; EndLease (where the ledger keys leases by tenant)
	Credit quota.Micro   // SetCredit
	Lease  *quota.Lease  // PutLease
	Record *TenantRecord // PutTenant
	Holder *Holder       // PutHolder
}

// MemLedger is a Ledger in memory: the embedded default's and the chaos
// harness's. It outlives the coordinators that use it, as an external
// store would. It is safe for concurrent use.
type MemLedger struct {
	mu      sync.Mutex
	epoch   uint64
	nextID  uint64
	leases  map[uint64]quota.Lease
	credit  map[string]quota.Micro
	tenants map[string]TenantRecord
	seeded  bool
	holders map[string]Holder
	// restored is the mark of a restore (Restore), nil without one.
	restored *Restored
	// applied says whether the newest Commit at the current epoch was
	// applied: what Resolve reads back. A write to memory is applied or
	// refused within its call, so no later one can change the answer.
	applied bool
}

var _ Ledger = (*MemLedger)(nil)

// NewMemLedger returns an empty ledger at epoch 0.
func NewMemLedger() *MemLedger {
	return &MemLedger{nextID: 1, leases: map[uint64]quota.Lease{}, credit: map[string]quota.Micro{}, tenants: map[string]TenantRecord{},
		holders: map[string]Holder{}}
}

// Fence implements Ledger.
func (l *MemLedger) Fence(ctx context.Context) (Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return Snapshot{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.epoch++
	l.applied = false
	leases := slices.Collect(maps.Values(l.leases))
	slices.SortFunc(leases, func(a, b quota.Lease) int { return cmp.Compare(a.ID, b.ID) })
	var tenants []TenantRecord
	for _, name := range slices.Sorted(maps.Keys(l.tenants)) {
		tenants = append(tenants, l.tenants[name])
	}
	var holders []Holder
	for _, region := range slices.Sorted(maps.Keys(l.holders)) {
		holders = append(holders, l.holders[region])
	}
	return Snapshot{Epoch: l.epoch, NextID: l.nextID, Leases: leases, Credit: maps.Clone(l.credit),
		Tenants: tenants, Seeded: l.seeded, Holders: holders, Restored: l.restored}, nil
}

// Commit implements Ledger. It never fails with ErrOutcomeUnknown: a
// write to memory is applied or refused within the call.
func (l *MemLedger) Commit(ctx context.Context, epoch uint64, ops ...Op) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if epoch != l.epoch {
		return fmt.Errorf("%w: write at epoch %d, the ledger is at %d", quota.ErrStaleEpoch, epoch, l.epoch)
	}
	l.applied = false
	if err := ctx.Err(); err != nil {
		return err
	}
	// Check everything first: all or nothing.
	credit := maps.Clone(l.credit)
	for i, op := range ops {
		switch op.Kind {
		case PutLease:
			if op.Lease == nil || op.Lease.ID == 0 {
				return fmt.Errorf("coordinator: ledger op %d: lease ID 0", i)
			}
		case EndLease:
		case SetCredit:
			if op.Credit < 0 {
				return fmt.Errorf("coordinator: ledger op %d: tenant %q credit %v: want 0 or more", i, op.Tenant, op.Credit)
			}
			credit[op.Tenant] = op.Credit
		case PutTenant:
			if op.Record == nil || op.Record.Name != op.Tenant || op.Tenant == "" {
				return fmt.Errorf("coordinator: ledger op %d: tenant record %q under the name %q", i, recordName(op.Record), op.Tenant)
			}
		case DeleteTenant, MarkSeeded, ClearRestored, ReserveIDs:
		case PutHolder:
			if op.Holder == nil || op.Holder.Region == "" {
				return fmt.Errorf("coordinator: ledger op %d: a holder without a region", i)
			}
		default:
			return fmt.Errorf("coordinator: ledger op %d: unknown kind %d", i, op.Kind)
		}
	}
	for _, op := range ops {
		switch op.Kind {
		case PutLease:
			l.leases[op.Lease.ID] = *op.Lease
			l.nextID = max(l.nextID, op.Lease.ID+1)
		case EndLease:
			delete(l.leases, op.ID)
		case PutTenant:
			l.tenants[op.Tenant] = *op.Record
		case DeleteTenant:
			delete(l.tenants, op.Tenant)
		case MarkSeeded:
			l.seeded = true
		case PutHolder:
			l.holders[op.Holder.Region] = *op.Holder
		case ClearRestored:
			l.restored = nil
		case ReserveIDs:
			l.nextID = max(l.nextID, op.ID)
		}
	}
	l.credit = credit
	l.applied = true
	return nil
}

// MemBackup is a copy of a MemLedger's contents (Backup), to restore
// later (Restore): the in-memory ledger's etcdctl snapshot save and
// restore.
type MemBackup struct{ snap Snapshot }

// Backup copies the ledger's contents.
func (l *MemLedger) Backup() MemBackup {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := MemBackup{snap: Snapshot{NextID: l.nextID, Leases: slices.Collect(maps.Values(l.leases)), Credit: maps.Clone(l.credit),
		Seeded: l.seeded, Restored: l.restored}}
	for _, t := range l.tenants {
		b.snap.Tenants = append(b.snap.Tenants, t)
	}
	for _, h := range l.holders {
		b.snap.Holders = append(b.snap.Holders, h)
	}
	return b
}

// Restore puts b's contents back, marked restored (Snapshot.Restored)
// with wait, the longest lease the caller knows of (0: the tenants'
// own). The epoch stays: it only ever rises, as the etcd ledger's does
// when its data are restored into a running etcd. The next ID too: a
// region never installs a lease whose ID is not above the one it holds.
func (l *MemLedger) Restore(b MemBackup, wait time.Duration, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leases, l.credit, l.tenants, l.holders = map[uint64]quota.Lease{}, maps.Clone(b.snap.Credit), map[string]TenantRecord{}, map[string]Holder{}
	if l.credit == nil {
		l.credit = map[string]quota.Micro{}
	}
	for _, ls := range b.snap.Leases {
		l.leases[ls.ID] = ls
	}
	for _, t := range b.snap.Tenants {
		l.tenants[t.Name] = t
	}
	for _, h := range b.snap.Holders {
		l.holders[h.Region] = h
	}
	l.seeded = b.snap.Seeded
	l.nextID = max(l.nextID, b.snap.NextID)
	l.restored = &Restored{Wait: wait, At: at.UnixNano()}
	l.applied = false
}

// Proof implements Ledger: a write to memory is applied or refused within
// its call, so while epoch is the ledger's, leadership is proven at the
// instant of asking, now — the only instant a proof of it covers, since
// another coordinator's Fence may come at any moment after.
func (l *MemLedger) Proof(epoch uint64, now time.Time) (sent, until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if epoch != l.epoch {
		return time.Time{}, time.Time{}
	}
	return now, now
}

// Confirm implements Ledger.
func (l *MemLedger) Confirm(ctx context.Context, epoch uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if epoch != l.epoch {
		return fmt.Errorf("%w: confirming epoch %d, the ledger is at %d", quota.ErrStaleEpoch, epoch, l.epoch)
	}
	return nil
}

// Resolve implements Ledger: whether the newest Commit at epoch was
// applied.
func (l *MemLedger) Resolve(ctx context.Context, epoch uint64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("coordinator: resolving a write: %w: %w", ErrOutcomeUnknown, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if epoch != l.epoch {
		return false, fmt.Errorf("%w: resolving a write at epoch %d, the ledger is at %d", quota.ErrStaleEpoch, epoch, l.epoch)
	}
	return l.applied, nil
}

// recordName is a PutTenant op's record's name, "" without one: for the
// refusal of an op whose record is missing or misnamed.
func recordName(r *TenantRecord) string {
	if r == nil {
		return ""
	}
	return r.Name
}
