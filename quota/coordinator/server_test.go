package coordinator

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/afloat/afloat/quota"
)

// gate is a ledger whose commits wait until let through, and fail while
// failing is set: to see what the server answers before and after a write.
type gate struct {
	*MemLedger
	maxOps  int
	mu      sync.Mutex
	open    chan struct{}
	failing bool
	commits [][]Op
}

// MaxOps is the ledger's limit on a transaction, as etcd's --max-txn-ops
// is etcdledger's; 0 keeps the server's default.
func (g *gate) MaxOps() int { return g.maxOps }

func (g *gate) Commit(ctx context.Context, epoch uint64, ops ...Op) error {
	<-g.open
	g.mu.Lock()
	g.commits = append(g.commits, ops)
	fail := g.failing
	g.mu.Unlock()
	if fail {
		return errors.New("gate: the ledger is down")
	}
	return g.MemLedger.Commit(ctx, epoch, ops...)
}

// TestServerAnswersOnlyWhenWritten: a grant is not answered while its
// write waits; calls that arrive during a write share the next
// transaction; a failed write fails its calls, and its steps are written
// with the next one.
func TestServerAnswersOnlyWhenWritten(t *testing.T) {
	synctest.Test(t, testServerAnswersOnlyWhenWritten)
}

func testServerAnswersOnlyWhenWritten(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &gate{MemLedger: NewMemLedger(), maxOps: 4, open: make(chan struct{})}
	srv, err := NewServer(ctx, Config{Tenants: []quota.Tenant{seedTenant()}}, g)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Run(ctx)
	type answer struct {
		g   quota.Grant
		err error
	}
	ask := func(region string, seq uint64) chan answer {
		ch := make(chan answer, 1)
		go func() {
			gr, err := srv.Renew(ctx, quota.Request{Tenant: "acme", Region: region, Seq: seq, Demand: -1})
			ch <- answer{gr, err}
		}()
		return ch
	}
	first := ask("eu", 1)
	synctest.Wait() // everything blocked: the first write waits at the gate
	select {
	case a := <-first:
		t.Fatalf("answered before the write: %+v", a)
	default:
	}
	// Three more while the first write is held: they queue.
	more := []chan answer{ask("us", 1), ask("ap", 1), ask("eu", 2)}
	synctest.Wait()
	close(g.open)
	for i, ch := range append([]chan answer{first}, more...) {
		if a := <-ch; a.err != nil || a.g.Lease.ID == 0 {
			t.Fatalf("call %d: %+v", i, a)
		}
	}
	g.mu.Lock()
	n := len(g.commits)
	for i, c := range g.commits {
		if len(c) > 4 {
			t.Errorf("commit %d has %d ops: over the limit of 4", i, len(c))
		}
	}
	g.mu.Unlock()
	if n >= 4 {
		t.Errorf("%d commits for 4 calls: the three that queued were not batched", n)
	}
	// 4 calls, the step that seeds the ledger with the tenant, and the
	// first reservation of IDs.
	if st := srv.Stats(); st.Steps != 6 || st.Txns != int64(n) {
		t.Errorf("stats %+v, want 6 steps in %d txns", st, n)
	}

	// The ledger fails: the call fails, nothing is answered as granted.
	g.mu.Lock()
	g.failing = true
	g.mu.Unlock()
	if a := <-ask("us", 2); a.err == nil {
		t.Fatalf("granted while the ledger failed: %+v", a.g)
	}
	leases, _ := g.MemLedger.Fence(ctx) // (raises the epoch: the server is fenced from here)
	g.mu.Lock()
	g.failing = false
	g.mu.Unlock()
	if a := <-ask("ap", 2); !errors.Is(a.err, quota.ErrStaleEpoch) {
		t.Fatalf("after a successor fenced the ledger: %v, want quota.ErrStaleEpoch", a.err)
	}
	if len(leases.Leases) != 4 {
		t.Fatalf("the ledger holds %d leases, want the 4 written", len(leases.Leases))
	}
	if err := srv.Run(ctx); !errors.Is(err, quota.ErrStaleEpoch) {
		t.Fatalf("Run after the fence: %v", err)
	}
	cancel()
	synctest.Wait()
}
