package assign

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/afloat/afloat/assign/assigntest"
	"github.com/afloat/afloat/internal/redisurl"

	"github.com/afloat/afloat/assign/internal/lua"
)

// clusterNode is one redis-server of a test cluster and its first slot.
type clusterNode struct {
	srv       *assigntest.Server
	bus       int // the cluster bus port
	firstSlot int
}

// startCluster starts a Redis Cluster of three masters on free loopback
// ports (client and bus ports both: the default bus port, port + 10000,
// may be taken), splits the 16,384 slots between them and waits until
// every node says the cluster is up. The servers stop when the test ends.
func startCluster(t *testing.T) []clusterNode {
	t.Helper()
	nodes := make([]clusterNode, 3)
	for i := range nodes {
		bus := freeTCPPort(t)
		nodes[i] = clusterNode{
			srv: assigntest.Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
				"--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", "5000"),
			bus:       bus,
			firstSlot: i * 16384 / 3,
		}
	}
	for i, n := range nodes {
		last := (i+1)*16384/3 - 1
		n.srv.MustDo("CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(n.firstSlot), strconv.Itoa(last))
	}
	for _, n := range nodes[1:] {
		host, port, _ := net.SplitHostPort(n.srv.Addr)
		nodes[0].srv.MustDo("CLUSTER", "MEET", host, port, strconv.Itoa(n.bus))
	}
	// Polling until the gossip has spread is waiting for the cluster to
	// form, not measuring time.
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range nodes {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{n.srv.Addr}, ForceSingleClient: true, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		for {
			info, err := c.Do(context.Background(), c.B().ClusterInfo().Build()).ToString()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:3") {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				t.Fatalf("the cluster did not form within 30 s: node %s says %q (%v)", n.srv.Addr, info, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.Close()
	}
	return nodes
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// owner is the index of the node that serves key's slot.
func owner(t *testing.T, nodes []clusterNode, key string) int {
	t.Helper()
	slot, err := strconv.Atoi(strings.TrimPrefix(nodes[0].srv.MustDo("CLUSTER", "KEYSLOT", key), ":"))
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for j, n := range nodes {
		if slot >= n.firstSlot {
			i = j
		}
	}
	return i
}

// TestRedisCluster: on a real three-master Redis Cluster, reached through
// one node's address, every operation of a pool and of least-in-flight
// works — its keys share a slot by the hash tag, so the scripts run on the
// node that owns it — for pools on each of the three nodes; picks stay
// level and count once; and after SCRIPT FLUSH on every node the EVAL
// fallback, routed by key, reloads the script where it is needed.
func TestRedisCluster(t *testing.T) {
	nodes := startCluster(t)
	ctx := ctxFor(t)
	c, err := redisurl.Dial(nodes[0].srv.URL, ErrInvalid)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Mode() != rueidis.ClientModeCluster {
		t.Fatalf("client mode %s, want cluster", c.Mode())
	}

	// One pool on each node.
	var names []string
	seen := map[int]bool{}
	for i := 0; len(names) < len(nodes); i++ {
		name := "cl-" + strconv.Itoa(i)
		if at := owner(t, nodes, lua.PoolKeys(name).Active); !seen[at] {
			seen[at] = true
			names = append(names, name)
		}
		if i > 1000 {
			t.Fatal("no pool name found for every node")
		}
	}

	pools := make([]*Pool, len(names))
	for i, name := range names {
		p := newPool(t, c, name)
		pools[i] = p
		if r, err := p.Add(ctx, 0, members(20)...); err != nil || r.Added != 20 {
			t.Fatalf("%s: add: %+v %v", name, r, err)
		}
	}

	level := func(stage string, want int64) {
		t.Helper()
		for i, p := range pools {
			if d, sum := spread(t, p); d > 1 || sum != want {
				t.Fatalf("%s, pool %s: max−min %d (want ≤ 1), sum %d (want %d)", stage, names[i], d, sum, want)
			}
		}
	}
	pickAll := func(stage string) {
		t.Helper()
		var wg sync.WaitGroup
		for _, p := range pools {
			for range 10 {
				wg.Go(func() {
					for range 100 {
						if _, err := p.Pick(ctx); err != nil {
							t.Errorf("%s: pick on %s: %v", stage, p.name, err)
							return
						}
					}
					res, err := p.PickBatch(ctx, 16)
					if err != nil {
						t.Errorf("%s: batch on %s: %v", stage, p.name, err)
						return
					}
					for _, r := range res {
						if r.Err != nil {
							t.Errorf("%s: batch on %s: %v", stage, p.name, r.Err)
						}
					}
				})
			}
		}
		wg.Wait()
	}

	pickAll("first load")
	level("after the first load", 10*116)

	for _, n := range nodes {
		n.srv.MustDo("SCRIPT", "FLUSH")
	}
	pickAll("after SCRIPT FLUSH on every node")
	level("after SCRIPT FLUSH", 2*10*116)
	for i, p := range pools {
		if p.ScriptReloads() == 0 {
			t.Errorf("pool %s: no script reload after SCRIPT FLUSH", names[i])
		}
	}

	for i, p := range pools {
		first, err := p.PickID(ctx, "order-1")
		if err != nil {
			t.Fatal(err)
		}
		again, err := p.PickID(ctx, "order-1")
		if err != nil || again != first {
			t.Fatalf("pool %s: retried pick gave %q %v, want %q", names[i], again, err, first)
		}
		if _, sum := spread(t, p); sum != 2*10*116+1 {
			t.Fatalf("pool %s: sum %d after one pick retried, want %d", names[i], sum, 2*10*116+1)
		}
		if err := p.Remove(ctx, first); err != nil {
			t.Fatal(err)
		}
		if err := p.Restore(ctx, RestoreKeepHistory, first); err != nil {
			t.Fatal(err)
		}
		if _, sum := spread(t, p); sum != 2*10*116+1 {
			t.Fatalf("pool %s: sum %d after remove and restore keeping the history, want %d", names[i], sum, 2*10*116+1)
		}

		l, err := NewLeases(wrap(t, c), names[i])
		if err != nil {
			t.Fatal(err)
		}
		if n, err := l.Add(ctx, "a", "b"); err != nil || n != 2 {
			t.Fatalf("pool %s: leases add: %d %v", names[i], n, err)
		}
		lease, err := l.PickLeastInFlight(ctx, time.Minute)
		if err != nil || lease.Member != "a" {
			t.Fatalf("pool %s: acquire: %+v %v", names[i], lease, err)
		}
		if ok, err := l.Release(ctx, lease); !ok || err != nil {
			t.Fatalf("pool %s: release: %v %v", names[i], ok, err)
		}
		if err := p.Delete(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// The same pools on the caller's own go-redis cluster client, retries
	// and redirects off: level batches of one script and of several, a
	// retried request id counted once, a sticky key, the EVAL fallback in
	// a pipeline that go-redis splits by node, and a Delete that leaves
	// nothing of the pool on the node that holds it but the least-in-flight
	// leases' keys.
	gc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].srv.Addr}, MaxRetries: -1, MaxRedirects: -1})
	defer gc.Close()
	gcc, err := FromGoRedis(gc)
	if err != nil {
		t.Fatal(err)
	}
	batch := func(p *Pool, n int) {
		t.Helper()
		res, err := p.PickBatch(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("pool %s on go-redis: batch pick: %v", p.name, r.Err)
			}
		}
	}
	for i, name := range names {
		p, err := New(gcc, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Add(ctx, 0, members(20)...); err != nil {
			t.Fatal(err)
		}
		batch(p, 2*pickChunk+1)
		first, err1 := p.PickID(ctx, "order-2")
		again, err2 := p.PickID(ctx, "order-2")
		_, err3 := p.PickSticky(ctx, "session-1")
		if err := errors.Join(err1, err2, err3); err != nil || again != first {
			t.Fatalf("pool %s on go-redis: retried pick gave %q, then %q: %v", name, first, again, err)
		}
		for _, n := range nodes {
			n.srv.MustDo("SCRIPT", "FLUSH")
		}
		batch(p, 300)
		if d, sum := spread(t, p); d > 1 || sum != 2*pickChunk+1+1+1+300 {
			t.Fatalf("pool %s on go-redis: max−min %d (want ≤ 1), sum %d", name, d, sum)
		}
		if err := p.Delete(ctx); err != nil {
			t.Fatal(err)
		}
		k := lua.PoolKeys(name)
		node := nodes[owner(t, nodes, k.Active)]
		nc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node.srv.Addr}, ForceSingleClient: true, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		left, err := nc.Do(ctx, nc.B().Keys().Pattern(k.Prefix+"*").Build()).AsStrSlice()
		nc.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range left {
			if !slices.Contains([]string{k.Inflight, k.Parked, k.Leases, k.LeaseMembers, k.LeaseSeq}, key) {
				t.Errorf("pool %s (%d) on go-redis: %s left after Delete on its node", name, i, key)
			}
		}
	}
}
