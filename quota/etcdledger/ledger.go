package etcdledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
)

// Errors of the ledger.
var (
	// ErrForeign: the key prefix holds data that is not this quota
	// cluster's ledger — another cluster's, or something else entirely.
	// The ledger refuses to start rather than count or overwrite it.
	ErrForeign = errors.New("etcdledger: the key prefix holds another cluster's data")
	// ErrNotLeader: the ledger has not (or no longer) won the election.
	ErrNotLeader = errors.New("etcdledger: not the leader")
)

// format names the layout of the keys under the prefix.
const format = "afloat-quota-ledger/1"

// Config configures a Ledger. The zero value of each optional field takes
// the default given with it.
type Config struct {
	// Client is the etcd client; required. The ledger does not close it.
	Client *clientv3.Client
	// Prefix is where the ledger keeps its keys; default "/afloat/quota/".
	Prefix string
	// Cluster names the quota cluster the prefix belongs to; default
	// "afloat". A prefix written by another cluster is refused
	// (ErrForeign), so two clusters pointed at one etcd by mistake cannot
	// count each other's leases.
	Cluster string
	// Candidate is what this coordinator announces when it leads: its
	// address, so that followers can send regions to it.
	Candidate string
	// SessionTTL is the etcd lease, in seconds, that keeps the election
	// key alive. Default 5: above etcd's own leader election with its
	// stock settings (--election-timeout 1000: a dead etcd leader is
	// replaced within 1–2 s, a split vote adds another 1–2 s), so that
	// keep-alives failing while etcd has no leader never cost the lead.
	// The leader keeps it alive every 250 ms and steps down only when etcd
	// answers that the lease is gone, or when no keep-alive has been
	// confirmed for the whole TTL (it may have expired by then). etcd
	// grants at least ⌈1.5 × its election timeout⌉ (2 s with the default
	// 1000). A dead leader blocks its successor for the whole TTL only
	// where DeposeAfter does not apply.
	SessionTTL int
	// DeposeAfter, in whole seconds, is how long a leader's lease may go
	// without a keep-alive, as etcd's own leader counts it, before a
	// campaigning replica revokes it: a killed leader is replaced about
	// DeposeAfter after its death however long SessionTTL is. Default 2;
	// −1 for never (a successor waits for the lease to expire). It
	// applies only when it is below SessionTTL. etcd resets every lease's
	// TTL when its own leader changes (unless lease checkpointing is on),
	// so an etcd election never makes a live leader look stale; a leader
	// whose keep-alives stop for longer (a paused process, a cut link) is
	// deposed, which the fence makes safe: it can write nothing after.
	//
	// It also bounds the leader's proof of leadership (Proof): a leader
	// answers without a write only within DeposeAfter (less a margin) of
	// its newest keep-alive etcd confirmed, since a replica may depose it
	// then. Why 2 and not 1: a window under two seconds covers etcd's own
	// leader elections with its stock settings (one to two seconds, during
	// which no keep-alive is confirmed) for most renewals, which are
	// answered without a write; a region's lease of ten seconds, renewed
	// at half, rides out the two seconds a successor takes.
	DeposeAfter int
	// WriteTimeout bounds one transaction; default 500 ms, some twenty
	// times a loaded etcd's p99 (docs/benchmarks.md) and five times the
	// 100 ms past which etcd itself warns that a request took too long.
	// A write that went towards an etcd leader that died is otherwise
	// answered only after etcd's request timeout (7 s with stock
	// settings); bounded, its calls fail and the coordinator writes its
	// steps again, under the same fence, once etcd has a new leader. Its
	// outcome is unknown: etcd may have applied it.
	WriteTimeout time.Duration
	// MaxTxnOps is etcd's limit on the operations of a transaction
	// (--max-txn-ops); default 128.
	MaxTxnOps int
	// CompactEvery compacts the etcd history once this many revisions
	// have passed since the last compaction, keeping the last
	// CompactEvery; default 10,000, −1 for never (an etcd run with its
	// own --auto-compaction). Thousands of writes a second would fill
	// etcd's storage quota (2 GiB by default) within hours without it.
	CompactEvery int64
}

// DefaultSessionTTL is Config.SessionTTL's default, in seconds.
const DefaultSessionTTL = 5

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = "/afloat/quota/"
	}
	if !strings.HasSuffix(c.Prefix, "/") {
		c.Prefix += "/"
	}
	if c.Cluster == "" {
		c.Cluster = "afloat"
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.DeposeAfter == 0 {
		c.DeposeAfter = 2
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 500 * time.Millisecond
	}
	if c.MaxTxnOps == 0 {
		c.MaxTxnOps = 128
	}
	if c.CompactEvery == 0 {
		c.CompactEvery = 10_000
	}
	return c
}

// Validate reports the first field out of range.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Client == nil:
		return fmt.Errorf("%w: etcdledger: no etcd client", quota.ErrConfig)
	case len(c.Cluster) > 128:
		return fmt.Errorf("%w: etcdledger: cluster name of %d bytes: want at most 128", quota.ErrConfig, len(c.Cluster))
	case c.SessionTTL < 1 || c.SessionTTL > 600:
		return fmt.Errorf("%w: etcdledger: session TTL %d s: want 1 to 600", quota.ErrConfig, c.SessionTTL)
	case c.DeposeAfter < -1 || c.DeposeAfter > 600:
		return fmt.Errorf("%w: etcdledger: depose after %d s: want -1 (never) or 1 to 600", quota.ErrConfig, c.DeposeAfter)
	case c.WriteTimeout < 10*time.Millisecond || c.WriteTimeout > time.Minute:
		return fmt.Errorf("%w: etcdledger: write timeout %v: want 10ms to 1m", quota.ErrConfig, c.WriteTimeout)
	case c.MaxTxnOps < 8 || c.MaxTxnOps > 1_000_000:
		return fmt.Errorf("%w: etcdledger: max txn ops %d: want 8 to 1000000", quota.ErrConfig, c.MaxTxnOps)
	case c.CompactEvery < -1 || (c.CompactEvery > 0 && c.CompactEvery < 100):
		return fmt.Errorf("%w: etcdledger: compact every %d revisions: want -1 (never) or at least 100", quota.ErrConfig, c.CompactEvery)
	}
	return nil
}

// Ledger is a coordinator.Ledger on etcd. Fence campaigns in an
// etcd election and returns once this process leads; the epoch is the
// create revision of its election key, so every later leader's is higher.
// Commit writes every batch of ops as one transaction guarded by
// Compare(CreateRevision(leader key) = epoch): once a successor has won —
// or this leader's session has expired, deleting its key — a deposed or
// paused leader can write nothing. Lease expiries are the coordinator's
// own deadlines, stored as data; no etcd lease TTL is put on a quota
// lease (etcd resets every lease's TTL when its own leader changes).
//
// Keys under the prefix: meta (format and cluster name), election/…,
// lease/<id> (a quota.Lease in JSON), credit/<tenant> (micro-tokens),
// nextid, write (the mark of the newest write: see below), tenant/<name>
// (a coordinator.TenantRecord in JSON), restored (the mark of a restore,
// Restore: a coordinator.Restored in JSON),
// tenants-seeded (present once a config file's tenants were written) and
// holder/<region> (a coordinator.Holder in JSON: the agent incarnation
// that holds the region). Tenants and holders are written by the leader
// in the same fenced transactions as the leases, so a deposed leader
// cannot change one either.
//
// Writes are chained, so that one whose outcome is unknown can be settled
// (Resolve): each puts a mark of its own into the key write and is
// guarded also by Compare(ModRevision(write) = the revision of the newest
// write known applied). A cancelled transaction that etcd commits later
// lands only while the chain has not moved; Resolve reads the mark back
// and, if the write has not landed, moves the chain itself (a void mark),
// after which it never can. Fence moves the chain too, so that no write
// of an earlier epoch of the same session lands after the snapshot.
//
// A Ledger is safe for concurrent use; its writes go one at a time.
type Ledger struct {
	cfg Config

	wmu sync.Mutex // serializes Commit and Resolve: each extends the chain

	mu          sync.Mutex
	session     *session
	election    *concurrency.Election
	key         string // the election key while leading
	epoch       int64
	lastCompact int64
	nextID      uint64
	// The chain: writeRev is the write key's revision as of the newest
	// write known applied, marks numbers this ledger's marks, and unknown
	// is the mark of a write of unknown outcome ("": none), which would
	// set the next id to unknownNext.
	writeRev    int64
	marks       uint64
	unknown     string
	unknownNext uint64
}

var (
	_ coordinator.Ledger   = (*Ledger)(nil)
	_ coordinator.MaxOpser = (*Ledger)(nil)
)

// Open checks that the prefix is this cluster's ledger (writing its meta
// key if the prefix is empty) and returns a ledger that does not lead yet.
func Open(ctx context.Context, cfg Config) (*Ledger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	l := &Ledger{cfg: cfg}
	meta, _ := json.Marshal(struct {
		Format  string `json:"format"`
		Cluster string `json:"cluster"`
	}{format, cfg.Cluster})
	metaKey := cfg.Prefix + "meta"
	// Write the meta key only into an empty prefix.
	resp, err := cfg.Client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(metaKey), "=", 0)).
		Then(clientv3.OpGet(cfg.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())).
		Else(clientv3.OpGet(metaKey)).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("etcdledger: reading %s: %w", metaKey, err)
	}
	if resp.Succeeded {
		if n := resp.Responses[0].GetResponseRange().Count; n > 0 {
			return nil, fmt.Errorf("%w: %s holds %d keys and no %s: not an afloat quota ledger; use another --etcd-prefix", ErrForeign, cfg.Prefix, n, metaKey)
		}
		put, err := cfg.Client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(metaKey), "=", 0)).
			Then(clientv3.OpPut(metaKey, string(meta))).
			Commit()
		if err != nil {
			return nil, fmt.Errorf("etcdledger: writing %s: %w", metaKey, err)
		}
		if put.Succeeded {
			return l, nil
		}
		// Another coordinator wrote it first: check what it wrote.
		get, err := cfg.Client.Get(ctx, metaKey)
		if err != nil {
			return nil, fmt.Errorf("etcdledger: reading %s: %w", metaKey, err)
		}
		return l, l.checkMeta(get.Kvs, meta)
	}
	return l, l.checkMeta(resp.Responses[0].GetResponseRange().Kvs, meta)
}

func (l *Ledger) checkMeta(kvs []*mvccpb.KeyValue, want []byte) error {
	if len(kvs) == 0 {
		return fmt.Errorf("%w: %smeta vanished while starting", ErrForeign, l.cfg.Prefix)
	}
	if string(kvs[0].Value) != string(want) {
		return fmt.Errorf("%w: %smeta is %s, this coordinator's is %s: another quota cluster (or another version) writes here; use another --etcd-prefix or cluster name",
			ErrForeign, l.cfg.Prefix, kvs[0].Value, want)
	}
	return nil
}

// MaxOps implements coordinator.MaxOpser: etcd's limit, less the two
// operations Commit adds (the next id and the write's mark).
func (l *Ledger) MaxOps() int { return l.cfg.MaxTxnOps - 2 }

// mark is a write's mark: unique over every leader (the epoch is) and
// every write of one (n).
func mark(epoch int64, n uint64) string {
	return strconv.FormatInt(epoch, 10) + "." + strconv.FormatUint(n, 10)
}

// Fence implements coordinator.Ledger: it campaigns, blocking until this
// process leads (or ctx ends), then reads the ledger.
func (l *Ledger) Fence(ctx context.Context) (coordinator.Snapshot, error) {
	l.mu.Lock()
	s := l.session
	l.mu.Unlock()
	if s == nil || isDone(s.lost) {
		var err error
		if s, err = newSession(ctx, l.cfg.Client, l.cfg.SessionTTL); err != nil {
			return coordinator.Snapshot{}, err
		}
		l.mu.Lock()
		old := l.session
		l.session = s
		l.mu.Unlock()
		if old != nil {
			old.close(l.cfg.Client) //nolint:errcheck // lost already: gone, or expiring
		}
	}
	e := concurrency.NewElection(s.Session, l.cfg.Prefix+"election")
	// The campaign ends with the session, and deposes a leader whose
	// lease etcd reports stale (DeposeAfter) while it waits.
	cctx, stop := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.lost:
			stop()
		case <-cctx.Done():
		}
	}()
	if l.cfg.DeposeAfter > 0 {
		go deposeStale(cctx, l.cfg.Client, l.cfg.Prefix+"election/", s.Lease(), int64(l.cfg.DeposeAfter))
	}
	err := e.Campaign(cctx, l.cfg.Candidate)
	stop()
	if err != nil {
		if why := s.why(); why != nil && ctx.Err() == nil {
			err = why
		}
		return coordinator.Snapshot{}, fmt.Errorf("etcdledger: campaigning: %w", err)
	}
	snap := coordinator.Snapshot{Epoch: uint64(e.Rev()), Credit: map[string]quota.Micro{}}
	p := l.cfg.Prefix
	// One read, at one revision, after winning: everything every earlier
	// leader wrote is in it, and nothing it writes can change it now. It
	// moves the write chain: a write of an earlier epoch still in flight
	// — the same session's, whose election key, reused, has the same
	// revision — can no longer land after it. The leases and the tenants
	// are then read at that revision in pages (readPages): in one
	// response, 100,000 tenants' records and 300,000 leases were a
	// transient of hundreds of megabytes on top of the successor's
	// state, which made its peak memory.
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	l.marks++
	fenceMark := mark(e.Rev(), l.marks) + ".fence"
	l.mu.Unlock()
	resp, err := l.cfg.Client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev())).
		Then(clientv3.OpGet(p+"credit/", clientv3.WithPrefix()),
			clientv3.OpGet(p+"nextid"),
			clientv3.OpGet(p+"tenants-seeded"),
			clientv3.OpGet(p+"holder/", clientv3.WithPrefix()),
			clientv3.OpGet(p+"restored"),
			clientv3.OpPut(p+"write", fenceMark)).
		Commit()
	if err != nil {
		return coordinator.Snapshot{}, fmt.Errorf("etcdledger: reading the ledger: %w", err)
	}
	if !resp.Succeeded {
		return coordinator.Snapshot{}, fmt.Errorf("%w: lost the election while reading the ledger", quota.ErrStaleEpoch)
	}
	rev := resp.Header.Revision
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		v, err := strconv.ParseInt(string(kv.Value), 10, 64)
		if err != nil || v < 0 {
			return coordinator.Snapshot{}, fmt.Errorf("%w: %s: not a credit: %q", ErrForeign, kv.Key, kv.Value)
		}
		snap.Credit[strings.TrimPrefix(string(kv.Key), p+"credit/")] = quota.Micro(v)
	}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		v, err := strconv.ParseUint(string(kvs[0].Value), 10, 64)
		if err != nil {
			return coordinator.Snapshot{}, fmt.Errorf("%w: %snextid: %q", ErrForeign, p, kvs[0].Value)
		}
		snap.NextID = max(snap.NextID, v)
	}
	snap.Seeded = len(resp.Responses[2].GetResponseRange().Kvs) > 0
	for _, kv := range resp.Responses[3].GetResponseRange().Kvs {
		var h coordinator.Holder
		if err := json.Unmarshal(kv.Value, &h); err != nil || p+"holder/"+h.Region != string(kv.Key) {
			return coordinator.Snapshot{}, fmt.Errorf("%w: %s: not a region's holder: %q", ErrForeign, kv.Key, kv.Value)
		}
		snap.Holders = append(snap.Holders, h)
	}
	if kvs := resp.Responses[4].GetResponseRange().Kvs; len(kvs) > 0 {
		var r coordinator.Restored
		if err := json.Unmarshal(kvs[0].Value, &r); err != nil {
			return coordinator.Snapshot{}, fmt.Errorf("%w: %srestored: %q", ErrForeign, p, kvs[0].Value)
		}
		snap.Restored = &r
	}
	err = l.readPages(ctx, p+"lease/", rev, func(kv *mvccpb.KeyValue) error {
		var ls quota.Lease
		if err := json.Unmarshal(kv.Value, &ls); err != nil || ls.ID == 0 {
			return fmt.Errorf("%w: %s: not a lease: %q", ErrForeign, kv.Key, kv.Value)
		}
		snap.Leases = append(snap.Leases, ls)
		snap.NextID = max(snap.NextID, ls.ID+1)
		return nil
	})
	if err != nil {
		return coordinator.Snapshot{}, err
	}
	err = l.readPages(ctx, p+"tenant/", rev, func(kv *mvccpb.KeyValue) error {
		var rec coordinator.TenantRecord
		if err := json.Unmarshal(kv.Value, &rec); err != nil || p+"tenant/"+rec.Name != string(kv.Key) {
			return fmt.Errorf("%w: %s: not a tenant: %q", ErrForeign, kv.Key, kv.Value)
		}
		snap.Tenants = append(snap.Tenants, rec)
		return nil
	})
	if err != nil {
		return coordinator.Snapshot{}, err
	}
	snap.NextID = max(snap.NextID, 1)
	l.mu.Lock()
	l.election, l.key, l.epoch, l.nextID = e, e.Key(), e.Rev(), snap.NextID
	l.writeRev, l.unknown = rev, ""
	l.lastCompact = max(l.lastCompact, rev)
	l.mu.Unlock()
	return snap, nil
}

// fencePage is how many keys a page of the fence's read holds
// (readPages): about a megabyte of leases.
const fencePage = 5_000

// readPages reads every key under prefix as of revision rev, fencePage
// keys at a time, and hands each to each, in the order of the keys. A
// revision compacted meanwhile fails it: the successor campaigns again.
func (l *Ledger) readPages(ctx context.Context, prefix string, rev int64, each func(*mvccpb.KeyValue) error) error {
	from, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
	for {
		resp, err := l.cfg.Client.Get(ctx, from, clientv3.WithRange(end), clientv3.WithRev(rev),
			clientv3.WithLimit(fencePage), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		if err != nil {
			return fmt.Errorf("etcdledger: reading the ledger (%s): %w", strings.TrimPrefix(prefix, l.cfg.Prefix), err)
		}
		for _, kv := range resp.Kvs {
			if err := each(kv); err != nil {
				return err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		// The next page starts just after the last key read.
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// Commit implements coordinator.Ledger: one transaction, guarded by the
// leader key's create revision and the write chain. Ops on one key keep
// the last (etcd refuses a key twice in one transaction): a lease put and
// ended in one batch is deleted. A transaction that fails other than by
// etcd's refusal of its form has an unknown outcome
// (coordinator.ErrOutcomeUnknown): Resolve settles it, and until then
// Commit refuses to write.
func (l *Ledger) Commit(ctx context.Context, epoch uint64, ops ...coordinator.Op) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	key, cur := l.key, l.epoch
	next, rev, unknown := l.nextID, l.writeRev, l.unknown
	l.mu.Unlock()
	if key == "" || uint64(cur) != epoch {
		return fmt.Errorf("%w: write at epoch %d, this ledger leads at %d", quota.ErrStaleEpoch, epoch, cur)
	}
	if unknown != "" {
		return fmt.Errorf("etcdledger: write refused: write %s has an unknown outcome; settle it first (Resolve)", unknown)
	}
	p := l.cfg.Prefix
	order := make([]string, 0, len(ops))
	last := make(map[string]clientv3.Op, len(ops))
	set := func(k string, op clientv3.Op) {
		if _, ok := last[k]; !ok {
			order = append(order, k)
		}
		last[k] = op
	}
	for i, op := range ops {
		switch op.Kind {
		case coordinator.PutLease:
			if op.Lease == nil || op.Lease.ID == 0 {
				return fmt.Errorf("etcdledger: op %d: lease ID 0", i)
			}
			v, err := json.Marshal(op.Lease)
			if err != nil {
				return fmt.Errorf("etcdledger: op %d: %w", i, err)
			}
			k := leaseKey(p, op.Lease.ID)
			set(k, clientv3.OpPut(k, string(v)))
			next = max(next, op.Lease.ID+1)
		case coordinator.EndLease:
			k := leaseKey(p, op.ID)
			set(k, clientv3.OpDelete(k))
		case coordinator.SetCredit:
			if op.Credit < 0 {
				return fmt.Errorf("etcdledger: op %d: tenant %q credit %v: want 0 or more", i, op.Tenant, op.Credit)
			}
			k := p + "credit/" + op.Tenant
			if op.Credit == 0 {
				set(k, clientv3.OpDelete(k))
			} else {
				set(k, clientv3.OpPut(k, strconv.FormatInt(int64(op.Credit), 10)))
			}
		case coordinator.PutTenant:
			if op.Tenant == "" || op.Record == nil || op.Record.Name != op.Tenant {
				return fmt.Errorf("etcdledger: op %d: tenant record %q under the name %q", i, recordName(op.Record), op.Tenant)
			}
			v, err := json.Marshal(op.Record)
			if err != nil {
				return fmt.Errorf("etcdledger: op %d: %w", i, err)
			}
			k := p + "tenant/" + op.Tenant
			set(k, clientv3.OpPut(k, string(v)))
		case coordinator.DeleteTenant:
			k := p + "tenant/" + op.Tenant
			set(k, clientv3.OpDelete(k))
		case coordinator.MarkSeeded:
			k := p + "tenants-seeded"
			set(k, clientv3.OpPut(k, "1"))
		case coordinator.ClearRestored:
			k := p + "restored"
			set(k, clientv3.OpDelete(k))
		case coordinator.ReserveIDs:
			next = max(next, op.ID) // written below, with every write
		case coordinator.PutHolder:
			if op.Holder == nil || op.Holder.Region == "" {
				return fmt.Errorf("etcdledger: op %d: a holder without a region", i)
			}
			v, err := json.Marshal(op.Holder)
			if err != nil {
				return fmt.Errorf("etcdledger: op %d: %w", i, err)
			}
			k := p + "holder/" + op.Holder.Region
			set(k, clientv3.OpPut(k, string(v)))
		default:
			return fmt.Errorf("etcdledger: op %d: unknown kind %d", i, op.Kind)
		}
	}
	then := make([]clientv3.Op, 0, len(order)+1)
	for _, k := range order {
		then = append(then, last[k])
	}
	l.mu.Lock()
	l.marks++
	m := mark(cur, l.marks)
	l.mu.Unlock()
	then = append(then, clientv3.OpPut(p+"nextid", strconv.FormatUint(next, 10)), clientv3.OpPut(p+"write", m))
	if len(then) > l.cfg.MaxTxnOps {
		return fmt.Errorf("etcdledger: %d operations in one transaction, etcd takes at most %d (etcd.max_txn_ops): %w",
			len(then), l.cfg.MaxTxnOps, coordinator.ErrTxnTooLarge)
	}
	wctx, cancel := context.WithTimeout(ctx, l.cfg.WriteTimeout)
	resp, err := l.cfg.Client.Txn(wctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", int64(epoch)),
			clientv3.Compare(clientv3.ModRevision(p+"write"), "=", rev)).
		Then(then...).
		Else(clientv3.OpGet(key), clientv3.OpGet(p+"write")).
		Commit()
	cancel()
	if err != nil {
		if errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrRequestTooLarge) {
			// etcd's limits are lower than the config says: nothing was
			// applied, and the coordinator splits the write smaller.
			return fmt.Errorf("etcdledger: etcd refused %d ops in one transaction: %w: %w", len(then), coordinator.ErrTxnTooLarge, err)
		}
		if refused(err) {
			return fmt.Errorf("etcdledger: writing %d ops: %w", len(then), err)
		}
		l.mu.Lock()
		l.unknown, l.unknownNext = m, next
		l.mu.Unlock()
		return fmt.Errorf("etcdledger: writing %d ops (write %s): %w: %w", len(then), m, coordinator.ErrOutcomeUnknown, err)
	}
	if !resp.Succeeded {
		if err := l.fenceLost(resp, epoch); err != nil {
			return err
		}
		// The chain moved under this leader: only a write of its own can
		// move it, and none was unsettled. Take up the chain where it is,
		// and refuse this write (nothing of it was applied).
		w := resp.Responses[1].GetResponseRange().Kvs
		l.mu.Lock()
		if len(w) > 0 {
			l.writeRev = w[0].ModRevision
		}
		l.mu.Unlock()
		return fmt.Errorf("etcdledger: write %s refused: the write chain moved under this leader (to %v)", m, w)
	}
	l.mu.Lock()
	l.nextID = max(l.nextID, next)
	rev = resp.Header.Revision
	l.writeRev = rev
	compact := l.cfg.CompactEvery > 0 && rev-l.lastCompact >= 2*l.cfg.CompactEvery
	if compact {
		l.lastCompact = rev - l.cfg.CompactEvery
	}
	l.mu.Unlock()
	if compact {
		// Keep the last CompactEvery revisions; an error here costs disk,
		// not correctness, and the next threshold tries again.
		go l.cfg.Client.Compact(context.WithoutCancel(ctx), rev-l.cfg.CompactEvery) //nolint:errcheck
	}
	return nil
}

// fenceLost reads a failed guard's Else (the election key first): the
// error if this leader's key is gone, nil if it is the chain that moved.
func (l *Ledger) fenceLost(resp *clientv3.TxnResponse, epoch uint64) error {
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 || kvs[0].CreateRevision != int64(epoch) {
		return fmt.Errorf("%w: the election key of epoch %d is gone: a successor leads, or this leader's session expired", quota.ErrStaleEpoch, epoch)
	}
	return nil
}

// refused says whether etcd refused a transaction for its form — then
// nothing of it was applied — rather than its outcome being unknown.
func refused(err error) bool {
	return errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrRequestTooLarge) ||
		errors.Is(err, rpctypes.ErrDuplicateKey) || errors.Is(err, rpctypes.ErrEmptyKey)
}

// Resolve implements coordinator.Ledger: it settles the write of unknown
// outcome. Under the same fence and chain as the write, it moves the
// chain (a void mark): done, the write had not landed and never will; if
// the chain had moved already, the write key's mark says whether the
// write landed (its own mark) or an earlier Resolve voided it (a void
// transaction of unknown outcome itself).
func (l *Ledger) Resolve(ctx context.Context, epoch uint64) (bool, error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	key, cur := l.key, l.epoch
	rev, unknown := l.writeRev, l.unknown
	l.mu.Unlock()
	if key == "" || uint64(cur) != epoch {
		return false, fmt.Errorf("%w: resolving a write at epoch %d, this ledger leads at %d", quota.ErrStaleEpoch, epoch, cur)
	}
	if unknown == "" {
		return false, nil
	}
	p := l.cfg.Prefix
	void := unknown + ".void"
	// Bounded as a write is (WriteTimeout): one sent towards an etcd
	// leader that died would wait out etcd's request timeout; timed out,
	// it is itself of unknown outcome, and the caller asks again.
	wctx, cancel := context.WithTimeout(ctx, l.cfg.WriteTimeout)
	resp, err := l.cfg.Client.Txn(wctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", int64(epoch)),
			clientv3.Compare(clientv3.ModRevision(p+"write"), "=", rev)).
		Then(clientv3.OpPut(p+"write", void)).
		Else(clientv3.OpGet(key), clientv3.OpGet(p+"write")).
		Commit()
	cancel()
	if err != nil {
		return false, fmt.Errorf("etcdledger: settling write %s: %w: %w", unknown, coordinator.ErrOutcomeUnknown, err)
	}
	settle := func(rev int64, applied bool) (bool, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.writeRev, l.unknown = rev, ""
		if applied {
			l.nextID = max(l.nextID, l.unknownNext)
		}
		return applied, nil
	}
	if resp.Succeeded {
		return settle(resp.Header.Revision, false)
	}
	if err := l.fenceLost(resp, epoch); err != nil {
		return false, err
	}
	w := resp.Responses[1].GetResponseRange().Kvs
	switch {
	case len(w) > 0 && string(w[0].Value) == unknown:
		return settle(w[0].ModRevision, true)
	case len(w) > 0 && string(w[0].Value) == void:
		return settle(w[0].ModRevision, false)
	}
	return false, fmt.Errorf("etcdledger: settling write %s: the write chain holds %v, neither it nor its void", unknown, w)
}

func leaseKey(prefix string, id uint64) string {
	return prefix + "lease/" + fmt.Sprintf("%020d", id)
}

// Proof implements coordinator.Ledger: the newest keep-alive of this
// ledger's session that etcd confirmed, while it leads at epoch. etcd
// refreshed the session's lease no earlier than the keep-alive was sent,
// so the election key on it — and with it this leadership — lasts at
// least the TTL etcd answered from that sending, unless the lease is
// revoked: by this ledger's Close, or by a campaigning replica once etcd
// counts it DeposeAfter seconds without a keep-alive, which is why the
// window is the shorter of the two. Less a margin (leaderMargin) for the
// rate at which etcd's clock and this one may differ.
func (l *Ledger) Proof(epoch uint64, _ time.Time) (sent, until time.Time) {
	l.mu.Lock()
	s, cur, key := l.session, l.epoch, l.key
	l.mu.Unlock()
	if s == nil || key == "" || uint64(cur) != epoch || isDone(s.lost) {
		return time.Time{}, time.Time{}
	}
	sent, ttl := s.alive()
	window := ttl
	if after := time.Duration(l.cfg.DeposeAfter) * time.Second; l.cfg.DeposeAfter > 0 && after < window {
		window = after
	}
	return sent, sent.Add(max(0, window-leaderMargin(window)))
}

// leaderMargin is what Proof takes off a window of leadership: 100 ms
// and a fiftieth of it. Over seconds, two machines' monotonic clocks
// drift apart by milliseconds at most (NTP slews by 500 ppm); what the
// margin covers beyond that is the deposer's rounding — etcd counts TTLs
// in whole seconds, and a campaigning replica revokes a lease that has
// gone more than DeposeAfter without a keep-alive, as soon as etcd's
// leader says so — and the time a revocation takes to reach etcd.
func leaderMargin(window time.Duration) time.Duration {
	return 100*time.Millisecond + window/50
}

// Confirm implements coordinator.Ledger: a keep-alive now, whose
// confirmation is a proof of leadership as of its sending (Proof); a
// lease etcd says is gone, or an election key no longer this epoch's, is
// quota.ErrStaleEpoch.
func (l *Ledger) Confirm(ctx context.Context, epoch uint64) error {
	l.mu.Lock()
	s, cur, key := l.session, l.epoch, l.key
	l.mu.Unlock()
	if s == nil || key == "" || uint64(cur) != epoch {
		return fmt.Errorf("%w: confirming epoch %d, this ledger leads at %d", quota.ErrStaleEpoch, epoch, cur)
	}
	wctx, cancel := context.WithTimeout(ctx, l.cfg.WriteTimeout)
	defer cancel()
	if err := s.confirm(wctx); err != nil {
		if errors.Is(err, ErrSessionLost) {
			return fmt.Errorf("%w: %w", quota.ErrStaleEpoch, err)
		}
		return err
	}
	return nil
}

// Epoch is the epoch this ledger leads at; 0 before Fence.
func (l *Ledger) Epoch() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return uint64(l.epoch)
}

// Leader returns the candidate value of the coordinator that leads now
// (its address), or ErrNotLeader's sentinel wrapped when none does.
func (l *Ledger) Leader(ctx context.Context) (string, error) {
	resp, err := l.cfg.Client.Get(ctx, l.cfg.Prefix+"election/", clientv3.WithFirstCreate()...)
	if err != nil {
		return "", fmt.Errorf("etcdledger: reading the election: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return "", fmt.Errorf("%w: no coordinator leads", ErrNotLeader)
	}
	return string(resp.Kvs[0].Value), nil
}

// Leading is Leader, and whether that coordinator has read the ledger
// since it won: the write chain's last mark carries its epoch (Fence puts
// one as it reads the ledger, each write another), read at one revision
// with the election. A coordinator that has won but not read the ledger —
// loading it, or stuck — is named by Leader without leading.
func (l *Ledger) Leading(ctx context.Context) (addr string, loaded bool, err error) {
	p := l.cfg.Prefix
	resp, err := l.cfg.Client.Txn(ctx).Then(
		clientv3.OpGet(p+"election/", clientv3.WithFirstCreate()...),
		clientv3.OpGet(p+"write")).Commit()
	if err != nil {
		return "", false, fmt.Errorf("etcdledger: reading the election: %w", err)
	}
	el := resp.Responses[0].GetResponseRange().Kvs
	if len(el) == 0 {
		return "", false, fmt.Errorf("%w: no coordinator leads", ErrNotLeader)
	}
	epoch := strconv.FormatInt(el[0].CreateRevision, 10) + "."
	w := resp.Responses[1].GetResponseRange().Kvs
	return string(el[0].Value), len(w) > 0 && strings.HasPrefix(string(w[0].Value), epoch), nil
}

// Lost is closed when this ledger's session ends: etcd answered that its
// lease is gone (expired, or revoked by a successor as stale), or no
// keep-alive was confirmed within its TTL. It no longer leads (or may not:
// its writes are refused either way); LostErr says why.
func (l *Ledger) Lost() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.session == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return l.session.lost
}

// LostErr says why the session ended (wrapping ErrSessionLost); nil while
// it lives or before the first Fence.
func (l *Ledger) LostErr() error {
	l.mu.Lock()
	s := l.session
	l.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.why()
}

// Close resigns (if leading) and ends the session, revoking its lease, so
// that a successor need not wait for the session's TTL.
func (l *Ledger) Close() error {
	l.mu.Lock()
	s, e := l.session, l.election
	l.session, l.election, l.key = nil, nil, ""
	l.mu.Unlock()
	if e != nil {
		ctx, cancel := context.WithTimeout(context.Background(), timeoutClose)
		e.Resign(ctx) //nolint:errcheck // the revocation deletes the key anyway
		cancel()
	}
	if s != nil {
		return s.close(l.cfg.Client)
	}
	return nil
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// timeoutClose bounds Close's resignation.
const timeoutClose = 2 * time.Second

// recordName is a PutTenant op's record's name, "" without one: for the
// refusal of an op whose record is missing or misnamed.
func recordName(r *coordinator.TenantRecord) string {
	if r == nil {
		return ""
	}
	return r.Name
}
