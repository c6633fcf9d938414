package chaos

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/afloat/afloat/internal/rng"
	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/eventlog"
	"github.com/afloat/afloat/quota/region"
)

// The simulation is discrete-event on a virtual clock (nanoseconds of
// "real" time). Nodes — the regions' limiters and the coordinator
// processes — see only their own clocks. Everything is drawn from the
// seed, so a run replays exactly.

// clockBase keeps every local clock positive whatever its offset.
const clockBase = int64(10 * time.Second)

func (c Clock) local(t int64) int64 {
	return clockBase + int64(c.Offset) + int64(float64(t)*(1+c.Drift))
}

// real maps a local reading back to virtual time, rounding up: the
// instant at which the node's clock shows at least l.
func (c Clock) real(l int64) int64 {
	return int64(math.Ceil(float64(l-clockBase-int64(c.Offset)) / (1 + c.Drift)))
}

// evKind is what a scheduled item is for.
type evKind uint8

// The kinds of scheduled items (actions.go adds the scripted ones).
const (
	evArrival evKind = iota
	evRegionTick
	evToCoord
	evToRegion
	evExpire
	evCoordTick
	evTraffic
	evPartition
	evHeal
	evOutage
	evSuccessor
	evWake
	evReconnect
	evStop
)

// msgKind is what a message between a region and the coordinator carries.
type msgKind uint8

// The messages between the regions and the coordinator.
const (
	msgRequest    msgKind = iota // a renewal
	msgGrant                     // its grant
	msgReturn                    // a lease given back
	msgNudge                     // renew soon
	msgAttach                    // an agent attaches (Config.Duplicate's runs)
	msgAttached                  // the attach's answer: inc, or a refusal with wait
	msgSuperseded                // a call of incarnation inc was refused: attach again
)

type item struct {
	at   int64
	seq  uint64
	kind evKind
	a    int32 // region index, segment, outage index
	b    int32 // coordinator process
	m    *message
}

type message struct {
	req   quota.Request
	grant quota.Grant
	ret   quota.Return
	nudge quota.Nudge
	what  msgKind
	inc   uint64
	wait  time.Duration
}

// heap is the event queue, by time and then by scheduling order. Written
// out, not internal/heap: faster by BenchmarkRun (docs/benchmarks.md).
type heap []item

func (h heap) less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}

func (h *heap) push(it item) {
	*h = append(*h, it)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *heap) pop() item {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && q.less(l, m) {
			m = l
		}
		if r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}

type regionNode struct {
	name   string
	lim    *region.Limiter
	clock  Clock
	link   Link
	cut    int // partitions in force
	conn   int // the coordinator process it talks to
	rate   float64
	next   int64 // next arrival, virtual ns; math.MaxInt64 for none
	rng    *rng.Rand
	offers int64
	admits int64
	// Agents attach (Config.Duplicate's runs): inc is the incarnation the
	// coordinator gave it, 0 until then; it asks again at nextAttach.
	agent      string
	inc        uint64
	nextAttach int64 // local clock
}

type coordNode struct {
	core   *coordinator.Core
	clock  Clock
	dead   bool
	paused bool
	queue  []item
	fenced bool
	// deposed: an outage took it down, and its successor is on the way:
	// it can no longer prove that it leads (confirm), as etcd would
	// refuse its session's keep-alive once a replica deposed it.
	deposed bool
	// ledUntil is the end of its newest proof of leadership, on the
	// virtual clock: a successor takes over no earlier (etcd elects none
	// while the leader's session lives).
	ledUntil int64
	// bg holds the background steps (Step.Background) until its next
	// tick (writeStep), and loses them if it dies first.
	bg []coordinator.Step
}

// leadWindow is how long a coordinator's proof of leadership lasts, on
// its own clock, from the moment it asked: the etcd ledger's with its
// defaults — a replica deposes a leader whose session etcd counts two
// seconds (etcd.depose_after) without a keep-alive — less its margin
// (etcdledger.Ledger.Proof). The harness's coordinators ask whenever an
// answer without a write needs it, as a real one keeps its session alive
// every 250 ms.
const leadWindow = 2*time.Second - 140*time.Millisecond

type sim struct {
	cfg     Config
	t       quota.Tenant
	sch     *Schedule
	now     int64
	end     int64
	seq     uint64
	q       heap
	regions []*regionNode
	coords  []*coordNode
	cur     int // the coordinator process regions turn to
	ledger  coordinator.Ledger
	net     *rng.Rand
	out     eventlog.Writer
	ev      eventlog.Event
	broken  faults
	refused int    // ledger writes refused for another reason than the epoch
	attach  bool   // regions attach before they renew (Config.Duplicate)
	lastInc uint64 // the last incarnation drawn
}

func (s *sim) at(t int64, it item) {
	it.at = t
	s.seq++
	it.seq = s.seq
	s.q.push(it)
}

func (s *sim) emit(e eventlog.Event) {
	e.T = s.now
	switch e.Kind {
	case eventlog.Start, eventlog.Admit, eventlog.Reject, eventlog.Lease, eventlog.End, eventlog.Credit,
		eventlog.Install, eventlog.Supersede, eventlog.Expire, eventlog.Return:
		e.Tenant = s.t.Name
	}
	s.ev = e
	s.out.Write(&s.ev)
}

// costs of requests: 1, 2 or 5 tokens, 70/20/10 %, so 1.9 on average.
const meanCost = 0.7*1 + 0.2*2 + 0.1*5

func drawCost(r *rng.Rand) int64 {
	u := r.Float64()
	switch {
	case u < 0.7:
		return 1
	case u < 0.9:
		return 2
	}
	return 5
}

func (s *sim) nextArrival(r *regionNode) {
	if r.rate <= 0 {
		r.next = math.MaxInt64
		return
	}
	r.next = s.now + int64(r.rng.Exp(meanCost/r.rate)*1e9) + 1
}

func newSim(cfg Config, sch *Schedule, out eventlog.Writer, broken faults) (*sim, error) {
	s := &sim{cfg: cfg, t: cfg.Tenant, sch: sch, end: int64(cfg.Duration), out: out, broken: broken, attach: cfg.Duplicate != ""}
	s.net = rng.New(cfg.Seed ^ 0x85ebca6b)
	s.ledger = broken.ledger(coordinator.NewMemLedger())
	names := s.t.Regions
	if cfg.Duplicate != "" {
		names = append(slices.Clone(names), cfg.Duplicate) // its second agent, last
	}
	for i, name := range names {
		rc := region.DefaultConfig(name, s.t.Name)
		rc.Caches = 1 // one cache, so that the run depends on its seed alone
		if cfg.NoCaches {
			rc.Caches = -1
		}
		lim, err := broken.newLimiter(rc)
		if err != nil {
			return nil, err
		}
		link, ok := sch.Links[name]
		if !ok {
			link = Link{Delay: 20 * time.Millisecond}
		}
		s.regions = append(s.regions, &regionNode{
			name: name, lim: lim, clock: sch.Clocks[name], link: link,
			rng: rng.New(cfg.Seed*2654435761 + uint32(i+1)*40503), next: math.MaxInt64,
			agent: fmt.Sprintf("%s agent %d", name, i+1),
		})
	}
	return s, nil
}

// startCoordinator starts coordinator process k (fencing the ledger).
func (s *sim) startCoordinator() error {
	k := len(s.coords)
	cl := Clock{}
	if n := len(s.sch.CoordClocks); n > 0 {
		cl = s.sch.CoordClocks[k%n]
	}
	node := &coordNode{clock: cl}
	core, err := s.broken.openCore(context.Background(), coordinator.Config{Tenants: []quota.Tenant{s.t}},
		s.ledger, time.Duration(cl.local(s.now)))
	if err != nil {
		return err
	}
	node.core = core
	s.coords = append(s.coords, node)
	s.emit(eventlog.Event{Kind: eventlog.Restart, Epoch: core.Epoch(), Offset: int64(cl.Offset), Drift: cl.Drift})
	s.at(s.now+int64(time.Second), item{kind: evCoordTick, b: int32(k)})
	return nil
}

// send puts a message on region r's link: toCoord, or to the region.
func (s *sim) send(r int, toCoord bool, coord int, m *message) {
	reg := s.regions[r]
	if reg.cut > 0 {
		return
	}
	l := reg.link
	if l.Loss > 0 && s.net.Float64() < l.Loss {
		return
	}
	copies := 1
	if l.Dup > 0 && s.net.Float64() < l.Dup {
		copies = 2
	}
	kind := evToRegion
	if toCoord {
		kind = evToCoord
	}
	for range copies {
		d := int64(l.Delay)
		if l.Jitter > 0 {
			d += int64(s.net.Exp(float64(l.Jitter)))
		}
		s.at(s.now+max(1, d), item{kind: kind, a: int32(r), b: int32(coord), m: m})
	}
}

func (s *sim) run() error {
	// The opening: the tenant, the clocks, the first coordinator, the
	// regions' timers, the schedule's events.
	s.emit(eventlog.Event{Kind: eventlog.Start, Rate: s.t.Rate, Burst: s.t.Burst, N: int64(len(s.t.Regions)), Balance: s.t.Emergency, Why: s.t.Mode.String()})
	for _, r := range s.regions {
		if r.clock != (Clock{}) {
			s.emit(eventlog.Event{Kind: eventlog.Skew, Region: r.name, Offset: int64(r.clock.Offset), Drift: r.clock.Drift})
		}
	}
	if err := s.startCoordinator(); err != nil {
		return err
	}
	for i := range s.regions {
		s.at(int64(i+1)*int64(time.Millisecond), item{kind: evRegionTick, a: int32(i)})
	}
	for i, seg := range s.sch.Traffic {
		s.at(int64(seg.At), item{kind: evTraffic, a: int32(i)})
	}
	for i, p := range s.sch.Partitions {
		s.at(int64(p.From), item{kind: evPartition, a: int32(i)})
		s.at(int64(p.To), item{kind: evHeal, a: int32(i)})
	}
	for i, o := range s.sch.Outages {
		s.at(int64(o.At), item{kind: evOutage, a: int32(i)})
	}
	s.scheduleScripted()
	s.at(s.end, item{kind: evStop})

	for {
		// The next arrival against the next scheduled event.
		ri, next := -1, int64(math.MaxInt64)
		for i, r := range s.regions {
			if r.next < next {
				ri, next = i, r.next
			}
		}
		if len(s.q) > 0 && s.q[0].at <= next {
			it := s.q.pop()
			s.now = it.at
			if it.kind == evStop {
				break
			}
			if err := s.handle(it); err != nil {
				return err
			}
			continue
		}
		if ri < 0 {
			break
		}
		s.now = next
		s.arrive(s.regions[ri])
	}
	s.now = s.end
	s.emit(eventlog.Event{Kind: eventlog.Stop})
	return nil
}

func (s *sim) arrive(r *regionNode) {
	cost := drawCost(r.rng)
	local := r.clock.local(s.now)
	r.offers += cost
	if r.lim.AllowAt(local, s.t.Name, cost) {
		r.admits += cost
		s.emit(eventlog.Event{Kind: eventlog.Admit, Region: r.name, N: cost})
	} else {
		s.emit(eventlog.Event{Kind: eventlog.Reject, Region: r.name, N: cost})
	}
	s.nextArrival(r)
}

func (s *sim) handle(it item) error {
	switch it.kind {
	case evRegionTick:
		r := s.regions[it.a]
		local := r.clock.local(s.now)
		switch {
		case s.attach && r.inc == 0:
			// Attach first; again a second later if no answer came.
			if local >= r.nextAttach {
				r.nextAttach = local + int64(time.Second)
				s.send(int(it.a), true, r.conn, &message{what: msgAttach})
			}
		case r.lim.Due(local, s.t.Name):
			req, _ := r.lim.Request(local, s.t.Name)
			req.Incarnation = r.inc
			s.send(int(it.a), true, r.conn, &message{what: msgRequest, req: req, inc: r.inc})
		}
		s.at(s.now+int64(50*time.Millisecond), item{kind: evRegionTick, a: it.a})
	case evToCoord:
		return s.deliverToCoord(it)
	case evToRegion:
		s.deliverToRegion(it)
	case evExpire:
		// The lease's end, as the region measures it: the limiter says
		// whether the region stopped spending under it then (not if a
		// newer one replaced it, or a return said so).
		r := s.regions[it.a]
		local := r.clock.local(s.now)
		if st := r.lim.Status(local, s.t.Name); st.Lease.ID == it.m.grant.Lease.ID && st.Valid {
			s.at(s.now+int64(time.Millisecond), it) // rounding: not quite over yet
			return nil
		}
		if lease, at, ok := r.lim.Expired(local, s.t.Name); ok {
			eventlog.ExpireEvent(lease, at, r.clock.real, emitter{s})
		}
	case evCoordTick:
		c := s.coords[it.b]
		if c.dead || c.fenced || c.core.Stopped() != nil {
			return nil
		}
		if !c.paused {
			bg := c.bg
			c.bg = nil
			for _, st := range bg {
				if _, err := s.writeStep(int(it.b), st, true); errors.Is(err, quota.ErrStaleEpoch) {
					return nil
				}
			}
			steps, _ := c.core.Expire(time.Duration(c.clock.local(s.now)))
			for _, st := range steps {
				if _, err := s.write(int(it.b), st); errors.Is(err, quota.ErrStaleEpoch) {
					return nil
				}
			}
		}
		s.at(s.now+int64(time.Second), it)
	case evTraffic:
		seg := s.sch.Traffic[it.a]
		s.emit(eventlog.Event{Kind: eventlog.Traffic, Rates: seg.Rates})
		for _, r := range s.regions {
			r.rate = seg.Rates[r.name]
			s.nextArrival(r)
		}
	case evPartition:
		p := s.sch.Partitions[it.a]
		for _, r := range s.regions {
			if r.name == p.Region {
				r.cut++
				s.emit(eventlog.Event{Kind: eventlog.Partition, Region: r.name})
			}
		}
	case evHeal:
		p := s.sch.Partitions[it.a]
		for _, r := range s.regions {
			if r.name == p.Region {
				r.cut--
				s.emit(eventlog.Event{Kind: eventlog.Heal, Region: r.name})
			}
		}
	case evOutage:
		o := s.sch.Outages[it.a]
		c := s.coords[s.cur]
		if o.Pause {
			c.paused = true
			s.emit(eventlog.Event{Kind: eventlog.Pause, Epoch: c.core.Epoch()})
			s.at(s.now+int64(o.Wake), item{kind: evWake, a: it.a, b: int32(s.cur)})
		} else {
			c.dead = true
			c.queue, c.bg = nil, nil
			s.emit(eventlog.Event{Kind: eventlog.Crash, Epoch: c.core.Epoch()})
		}
		c.deposed = true
		// etcd elects no successor while the old leader's session lives:
		// not before its proof of leadership has run out.
		s.at(max(s.now+int64(o.Down), c.ledUntil+1), item{kind: evSuccessor, a: it.a})
	case evSuccessor:
		o := s.sch.Outages[it.a]
		if err := s.startCoordinator(); err != nil {
			return err
		}
		s.cur = len(s.coords) - 1
		for i, r := range s.regions {
			if o.Pause {
				s.at(s.now+int64(o.Reconnect[r.name]), item{kind: evReconnect, a: int32(i), b: int32(s.cur)})
			} else {
				r.conn = s.cur
			}
		}
	case evReconnect:
		s.regions[it.a].conn = int(it.b)
	case evSkew, evSample:
		return s.handleScripted(it)
	case evWake:
		c := s.coords[it.b]
		c.paused = false
		s.emit(eventlog.Event{Kind: eventlog.Wake, Epoch: c.core.Epoch()})
		queue := c.queue
		c.queue = nil
		for _, q := range queue {
			if err := s.deliverToCoord(q); err != nil {
				return err
			}
		}
	}
	return nil
}

// write is coordinator k's runner: it writes a step to the ledger,
// records it in the log — the journal: the leases it ended, the one it
// granted, the credit it added — and acknowledges it to the core, which
// gives the call's answer. A write refused for a stale epoch stops the
// coordinator.
func (s *sim) write(k int, st coordinator.Step) (coordinator.Answer, error) {
	return s.writeStep(k, st, false)
}

// writeStep writes st; a background step (Step.Background) only when
// due, and otherwise keeps it for the coordinator's next tick: a real
// runner writes those when it has nothing else to, after steps taken
// later.
func (s *sim) writeStep(k int, st coordinator.Step, due bool) (coordinator.Answer, error) {
	c := s.coords[k]
	if st.Background && !due {
		c.bg = append(c.bg, st) // for the next tick
		return coordinator.Answer{}, nil
	}
	var err error
	if len(st.Ops) > 0 {
		err = s.ledger.Commit(context.Background(), c.core.Epoch(), st.Ops...)
		if err == nil {
			// A write proves leadership as it lands.
			now := time.Duration(c.clock.local(s.now))
			c.core.Led(now, now)
		}
	} else {
		err = s.confirm(k, st.At())
	}
	if err == nil {
		s.journal(c, st)
	}
	ans, err := c.core.Advance(st, err)
	if errors.Is(err, quota.ErrStaleEpoch) {
		s.fence(k)
	}
	// The steps no caller waits for (a covered renewal's: the extension of
	// its cover's record, a reservation of IDs, its ends), after it.
	for _, d := range c.core.Deferred() {
		if d.Background {
			c.bg = append(c.bg, d)
			continue
		}
		if len(d.Ops) > 0 {
			err := s.ledger.Commit(context.Background(), c.core.Epoch(), d.Ops...)
			if err == nil {
				s.journal(c, d)
			}
			if _, err := c.core.Advance(d, err); errors.Is(err, quota.ErrStaleEpoch) {
				s.fence(k)
			}
		}
	}
	return ans, err
}

// confirm is coordinator k's runner proving that it leads, for a step
// taken at at (its clock) that writes nothing: by its newest proof, or by
// asking the ledger anew (a keep-alive, in etcd) — refused once it is
// deposed, and by a ledger a successor has fenced.
func (s *sim) confirm(k int, at time.Duration) error {
	c := s.coords[k]
	if c.core.Proven(at) {
		return nil
	}
	if c.deposed {
		return fmt.Errorf("%w: the coordinator was deposed", coordinator.ErrUnproven)
	}
	if err := s.ledger.Confirm(context.Background(), c.core.Epoch()); err != nil {
		return err
	}
	now := c.clock.local(s.now)
	c.core.Led(time.Duration(now), time.Duration(now)+leadWindow)
	c.ledUntil = max(c.ledUntil, c.clock.real(now+int64(leadWindow)))
	return nil
}

// journal logs what a written step did, in the lines the coordinator's
// process writes (eventlog.StepEvents), the coordinator's clock mapped to
// the run's.
func (s *sim) journal(c *coordNode, st coordinator.Step) {
	eventlog.StepEvents(st, s.now, func(d time.Duration) int64 { return c.clock.real(int64(d)) }, emitter{s})
}

// emitter writes events through emit: at the run's time, with its tenant.
type emitter struct{ s *sim }

func (w emitter) Write(e *eventlog.Event) { w.s.emit(*e) }

func (s *sim) fence(k int) {
	c := s.coords[k]
	if !c.fenced {
		c.fenced = true
		s.emit(eventlog.Event{Kind: eventlog.Fenced, Epoch: c.core.Epoch()})
	}
}

func (s *sim) deliverToCoord(it item) error {
	r := s.regions[it.a]
	if r.cut > 0 {
		return nil // the partition began while the message was on its way
	}
	c := s.coords[it.b]
	switch {
	case c.dead || c.fenced:
		return nil
	case c.paused:
		c.queue = append(c.queue, it)
		return nil
	}
	now := time.Duration(c.clock.local(s.now))
	switch it.m.what {
	case msgAttach:
		return s.attachAt(it, now)
	case msgRequest:
		step, err := c.core.Renew(now, it.m.req)
		if errors.Is(err, quota.ErrUnverifiedEpoch) {
			// The region has heard from a successor; this coordinator
			// refuses, and learns it is fenced from the ledger.
			return nil
		}
		if errors.Is(err, quota.ErrSuperseded) {
			s.send(int(it.a), false, int(it.b), &message{what: msgSuperseded, inc: it.m.inc})
			return nil
		}
		var ans coordinator.Answer
		if err == nil {
			ans, err = s.write(int(it.b), step)
		}
		if errors.Is(err, quota.ErrStaleEpoch) {
			s.fence(int(it.b))
			return nil
		}
		if err != nil {
			// A write the ledger refused: nothing was granted, as a real
			// coordinator would fail the request.
			s.refused++
			return nil
		}
		s.send(int(it.a), false, int(it.b), &message{what: msgGrant, grant: ans.Grant})
		s.nudge(int(it.b), ans.Nudges)
	case msgReturn:
		step, err := c.core.Return(now, it.m.ret)
		if errors.Is(err, quota.ErrUnverifiedEpoch) {
			return nil
		}
		if errors.Is(err, quota.ErrSuperseded) {
			s.send(int(it.a), false, int(it.b), &message{what: msgSuperseded, inc: it.m.ret.Incarnation})
			return nil
		}
		var ans coordinator.Answer
		if err == nil {
			ans, err = s.write(int(it.b), step)
		}
		if errors.Is(err, quota.ErrStaleEpoch) {
			s.fence(int(it.b))
			return nil
		}
		if err != nil {
			s.refused++
			return nil
		}
		s.nudge(int(it.b), ans.Nudges)
	}
	return nil
}

// nudge sends nudges from coordinator k to their regions.
func (s *sim) nudge(k int, nudges []quota.Nudge) {
	for _, n := range nudges {
		for i, rr := range s.regions {
			if rr.name == n.Region {
				s.send(i, false, k, &message{what: msgNudge, nudge: n})
			}
		}
	}
}

func (s *sim) deliverToRegion(it item) {
	r := s.regions[it.a]
	if r.cut > 0 {
		return
	}
	local := r.clock.local(s.now)
	switch it.m.what {
	case msgNudge:
		r.lim.Nudge(it.m.nudge)
	case msgAttached:
		if it.m.inc != 0 {
			r.inc = it.m.inc
		} else {
			// Refused: another agent holds the region. Ask again in a
			// second at most, as the network client does.
			r.nextAttach = local + int64(min(it.m.wait, time.Second))
		}
	case msgSuperseded:
		if r.inc == it.m.inc {
			r.inc = 0 // attach again
		}
	case msgGrant:
		in := r.lim.Install(local, it.m.grant)
		if !in.OK() {
			return
		}
		// The lines the region's process writes (eventlog's translation
		// of what its limiter did), at the run's time.
		eventlog.InstallEvents(in, local, r.clock.real, emitter{s})
		s.at(r.clock.real(in.Until), item{kind: evExpire, a: it.a, m: &message{grant: quota.Grant{Lease: in.Lease}}})
		if in.Return != nil {
			eventlog.ReturnEvent(*in.Return, local, r.clock.real, emitter{s})
			ret := *in.Return
			ret.Incarnation = r.inc
			s.send(int(it.a), true, r.conn, &message{what: msgReturn, ret: ret})
		}
	}
}

// attachAt is the coordinator's side of an attach: a new incarnation,
// written to the ledger before the answer, or a refusal while another
// agent's leases count.
func (s *sim) attachAt(it item, now time.Duration) error {
	c, r := s.coords[it.b], s.regions[it.a]
	s.lastInc++
	step, err := c.core.Attach(now, r.name, s.lastInc, r.agent)
	if err == nil {
		_, err = s.write(int(it.b), step)
	}
	var held *quota.HeldError
	switch {
	case errors.As(err, &held):
		s.send(int(it.a), false, int(it.b), &message{what: msgAttached, wait: held.Wait})
	case errors.Is(err, quota.ErrStaleEpoch):
		s.fence(int(it.b))
	case err != nil:
		s.refused++
	default:
		s.send(int(it.a), false, int(it.b), &message{what: msgAttached, inc: s.lastInc})
	}
	return nil
}
