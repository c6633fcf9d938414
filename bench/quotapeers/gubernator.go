package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	guber "github.com/gubernator-io/gubernator/v2"
	"github.com/sirupsen/logrus"
)

// gubernatorSystem is a 3-peer Gubernator cluster in process on loopback,
// one peer per region, in one of two behaviours (Gubernator's names, the
// RateLimitReq's behavior field):
//   - GLOBAL: each peer answers from its own copy and sends the hits to the
//     key's owner, which broadcasts the count back — fast, and by its own
//     proto's word possibly "allowing some requests beyond the chosen rate
//     limit";
//   - BATCHING, the default (0): a peer that does not own the key forwards
//     each hit to the owner (batched over up to 500 µs) and answers with
//     the owner's decision — one count, a round trip per decision, and
//     nothing for a region cut off from the owner.
//
// Each peer reaches each other peer through a fault proxy of its own
// (proxy[i][j] carries i's calls to j) that adds the cross-region delay,
// so that a region can be cut off from the others in both directions while
// they still reach each other.
//
// Gubernator places a key on the hash ring of the peers' addresses; as
// peer i names peer j by the proxy i uses for j, the ring is built on a
// peer's position instead (idPicker), so that all three agree on the
// owner. The owner is fixed to ownerRegion — the region where afloat's
// coordinator is said to run — so that the partition cuts the hot region
// off from the owner in both systems.
type gubernatorSystem struct {
	daemons []*guber.Daemon
	clients []guber.V1Client
	proxy   [][]*faultProxy
	req     *guber.RateLimitReq
}

// How the tenant is told to Gubernator. Its leaky bucket leaks Limit
// tokens per Duration and holds Burst. R 500/s with B 6,000 is written two
// ways: limitIsBurst (Limit 6,000 per 12 s, Burst 6,000) and limitIsRate
// (Limit 500 per 1 s, Burst 6,000). Both say the same; with GLOBAL the
// second meets an upstream defect of v2.13.0 — a peer's copy of a GLOBAL
// limit takes Burst = Limit from the owner's broadcast (gubernator.go,
// UpdatePeerGlobals: "Burst: g.Status.Limit"), and the next hit, seeing
// Burst changed, refills the copy to the request's Burst (algorithms.go,
// leakyBucket: "if b.Burst != r.Burst { if r.Burst > int64(b.Remaining)
// { b.Remaining = float64(r.Burst) }") — so it is measured too, as a user
// might well configure it.
type guberShape int

const (
	limitIsBurst guberShape = iota
	limitIsRate
)

func newGubernator(ctx context.Context, t tenant, names []string, owner int, shape guberShape, behavior guber.Behavior) (*gubernatorSystem, error) {
	g := &gubernatorSystem{}
	fail := func(err error) (*gubernatorSystem, error) { g.close(); return nil, fmt.Errorf("gubernator: %w", err) }
	log := logrus.New()
	log.SetOutput(io.Discard)
	if os.Getenv("QUOTAPEERS_DEBUG") != "" {
		log.SetOutput(os.Stderr)
		log.SetLevel(logrus.DebugLevel)
	}
	n := len(names)
	ids := map[string]int{}
	for i := range n {
		d, err := guber.SpawnDaemon(ctx, guber.DaemonConfig{
			GRPCListenAddress: "127.0.0.1:0",
			HTTPListenAddress: "127.0.0.1:0",
			InstanceID:        names[i],
			Logger:            log,
			Picker:            &idPicker{ids: ids, owner: owner},
			// Behaviors: Gubernator's defaults (GlobalSyncWait 100 ms,
			// GlobalTimeout and BatchTimeout 500 ms).
		})
		if err != nil {
			return fail(err)
		}
		g.daemons = append(g.daemons, d)
		d.PeerInfo = guber.PeerInfo{GRPCAddress: d.GRPCListeners[0].Addr().String()}
		ids[d.PeerInfo.GRPCAddress] = i
	}
	g.proxy = make([][]*faultProxy, n)
	for i := range n {
		g.proxy[i] = make([]*faultProxy, n)
		for j := range n {
			if i == j {
				continue
			}
			p, err := newDelayProxy(g.daemons[j].PeerInfo.GRPCAddress, crossRegion)
			if err != nil {
				return fail(err)
			}
			g.proxy[i][j] = p
			ids[p.addr()] = j
		}
	}
	for i, d := range g.daemons {
		var peers []guber.PeerInfo
		for j := range n {
			if i == j {
				peers = append(peers, guber.PeerInfo{GRPCAddress: d.PeerInfo.GRPCAddress, IsOwner: true})
			} else {
				peers = append(peers, guber.PeerInfo{GRPCAddress: g.proxy[i][j].addr()})
			}
		}
		d.V1Server.SetPeers(peers)
		c, err := d.Client()
		if err != nil {
			return fail(err)
		}
		g.clients = append(g.clients, c)
	}
	g.req = &guber.RateLimitReq{
		Name: "bench", UniqueKey: tenantName, Hits: 1,
		Limit: int64(t.Burst), Duration: int64(t.Burst / t.Rate * guber.Second), Burst: int64(t.Burst),
		Algorithm: guber.Algorithm_LEAKY_BUCKET, Behavior: behavior,
	}
	if shape == limitIsRate {
		g.req.Limit, g.req.Duration = int64(t.Rate), guber.Second
	}
	return g, nil
}

func (g *gubernatorSystem) allow(ctx context.Context, r int) bool {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := g.clients[r].GetRateLimits(ctx, &guber.GetRateLimitsReq{Requests: []*guber.RateLimitReq{g.req}})
	if err != nil || len(resp.Responses) != 1 {
		return false
	}
	x := resp.Responses[0]
	return x.Error == "" && x.Status == guber.Status_UNDER_LIMIT
}

func (g *gubernatorSystem) partition(r int, cut bool) {
	for j := range g.proxy {
		if j == r {
			continue
		}
		g.proxy[r][j].setCut(cut)
		g.proxy[j][r].setCut(cut)
	}
}

func (g *gubernatorSystem) close() {
	for _, row := range g.proxy {
		for _, p := range row {
			if p != nil {
				p.shutdown()
			}
		}
	}
	for _, d := range g.daemons {
		d.Close()
	}
}

// idPicker is a PeerPicker (Gubernator's extension point for placing keys)
// that names a peer by its position, whatever address a peer reaches it
// at, and places every key on one owner.
type idPicker struct {
	ids   map[string]int // address → position; filled before SetPeers
	owner int

	mu    sync.Mutex
	peers []*guber.PeerClient
}

func (p *idPicker) New() guber.PeerPicker { return &idPicker{ids: p.ids, owner: p.owner} }

func (p *idPicker) Add(c *guber.PeerClient) {
	p.mu.Lock()
	p.peers = append(p.peers, c)
	p.mu.Unlock()
}

func (p *idPicker) Peers() []*guber.PeerClient {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*guber.PeerClient(nil), p.peers...)
}

func (p *idPicker) GetByPeerInfo(info guber.PeerInfo) *guber.PeerClient {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.peers {
		if c.Info().GRPCAddress == info.GRPCAddress {
			return c
		}
	}
	return nil
}

func (p *idPicker) Get(key string) (*guber.PeerClient, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.peers {
		if p.ids[c.Info().GRPCAddress] == p.owner {
			return c, nil
		}
	}
	return nil, fmt.Errorf("no peer at position %d", p.owner)
}
