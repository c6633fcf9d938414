package eventlog

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/afloat/afloat/quota"
)

// Event is one line of the event log: Kind names what happened, T when.
//
// T is in nanoseconds, on the clock of the log's writer: in the chaos
// harness's logs, virtual time since the run began — real time as the
// simulation defines it, not any node's clock; in the logs of real
// processes (File: afloat quota coordinator and region --event-log),
// Unix time as the writing process reads its clock. A lease's
// activates_ns and expires_ns are on the same clock as T; a cluster's
// logs are merged on it (Merge), so its processes' clocks must agree to
// well within a lease's skew margin.
//
// What each kind carries:
//
//	start      the tenant a run or a process serves: rate, burst (tokens),
//	           n (regions), balance (E), why (mode)
//	admit      a region admitted n tokens of a tenant's traffic
//	reject     a region refused n tokens
//	counts     a region's decisions for a tenant over the span_ns before t_ns
//	           (an interval: t_ns − span_ns to t_ns, t_ns excluded), in place
//	           of their admit and reject lines: n tokens admitted by
//	           admit_count decisions, reject_n tokens refused by
//	           reject_count decisions
//	           (Counter writes them; the checker's slack for them is in
//	           Checker's documentation)
//	lease      a coordinator granted a lease (written to its ledger first):
//	           id, epoch, rate, burst, transfer, and the interval in which it
//	           counts, activates_ns to expires_ns; or, with cover, a covered
//	           lease, not written: the ledger's record of lease cover stands
//	           for it (coordinator.Config.Reserve)
//	end        a coordinator stopped counting lease id (why: superseded,
//	           returned, expired, detached)
//	credit     a coordinator took balance tokens of the return of lease id as
//	           credit (negative, with why "tenant …": an operator's change
//	           dropped that much)
//	install    a region began spending under lease id
//	supersede  a region stopped spending under lease id: a newer one replaced it
//	expire     a region stopped spending under lease id: it ran out
//	return     a region gave lease id back (balance: tokens handed over)
//	traffic    the offered load changed (rates: tokens a second by region)
//	partition  a region was cut off from the coordinator; heal: reconnected
//	crash      the coordinator process died; restart: a successor fenced
//	           the ledger (epoch) and took over; a real coordinator adds
//	           live, the IDs of the leases it restored from its ledger
//	           (every older lease had stopped counting by then)
//	pause      the coordinator froze; wake: it resumed, still believing it leads
//	fenced     a coordinator found it had been superseded and stopped
//	skew       a node's clock: offset_ns and drift (a region's, or with no
//	           region the coordinator's at epoch; at t_ns > 0 a scripted
//	           change, continuous with what the clock read before)
//	sample     a region's state (a scripted run's): the lease id it spends
//	           under (none: no valid lease), its epoch, rate and burst, and
//	           the bucket's balance
//	tenant     an operator (by) changed the tenant's configuration at the
//	           coordinator, in force from t_ns: why is create, update,
//	           delete, seed (the config file's, written once) or load (what
//	           a new leader read from its ledger); rate, burst, n
//	           (regions), balance (E) and mode are the configuration after
//	           the change (before it, for a delete)
//	stop       the end of the run, or of the process's log
//
// The traffic, partition, heal, crash, pause, wake, skew and sample kinds
// are the chaos harness's own; real processes write the others.
type Event struct {
	T         int64              `json:"t_ns"`
	Kind      Kind               `json:"-"` // ev
	Tenant    string             `json:"tenant,omitempty"`
	Region    string             `json:"region,omitempty"`
	N         int64              `json:"n,omitempty"`
	ID        uint64             `json:"id,omitempty"`
	Epoch     uint64             `json:"epoch,omitempty"`
	Rate      quota.Micro        `json:"-"`
	Burst     quota.Micro        `json:"-"`
	Transfer  quota.Micro        `json:"-"`
	Balance   quota.Micro        `json:"-"`
	Activates int64              `json:"activates_ns,omitempty"`
	Expires   int64              `json:"expires_ns,omitempty"`
	Cover     uint64             `json:"cover,omitempty"`
	Why       string             `json:"why,omitempty"`
	Rates     map[string]float64 `json:"rates,omitempty"`
	Offset    int64              `json:"offset_ns,omitempty"`
	Drift     float64            `json:"drift,omitempty"`
	Mode      string             `json:"mode,omitempty"`
	By        string             `json:"by,omitempty"`
	Live      *[]uint64          `json:"live,omitempty"`
	// Fence is a restart's on a ledger restored from a backup: for this
	// long the successor grants nothing, so an older lease missing from
	// Live — one the backup lacks — counts on until then.
	Fence int64 `json:"fence_ns,omitempty"`
	// A counts event's interval and tallies (N is its tokens admitted).
	Span     int64 `json:"span_ns,omitempty"`
	Admits   int64 `json:"admit_count,omitempty"`
	Rejects  int64 `json:"reject_count,omitempty"`
	Rejected int64 `json:"reject_n,omitempty"`
}

// eventJSON is Event with its kind by name and the quota amounts in
// tokens, for reading logs.
type eventJSON struct {
	Event
	Ev       string       `json:"ev"`
	Rate     *json.Number `json:"rate,omitempty"`
	Burst    *json.Number `json:"burst,omitempty"`
	Transfer *json.Number `json:"transfer,omitempty"`
	Balance  *json.Number `json:"balance,omitempty"`
}

// AppendJSON appends the event as one line of JSON, amounts in tokens.
// Only the fields that carry something are written: admit and reject
// lines, which are most of a log, stay short.
func (e *Event) AppendJSON(b []byte) []byte {
	b = append(b, `{"t_ns":`...)
	b = strconv.AppendInt(b, e.T, 10)
	b = append(b, `,"ev":`...)
	b = appendString(b, e.Kind.String())
	str := func(k, v string) {
		if v != "" {
			b = append(b, ',', '"')
			b = append(b, k...)
			b = append(b, '"', ':')
			b = appendString(b, v)
		}
	}
	num := func(k string, v int64) {
		if v != 0 {
			b = append(b, ',', '"')
			b = append(b, k...)
			b = append(b, '"', ':')
			b = strconv.AppendInt(b, v, 10)
		}
	}
	amt := func(k string, v quota.Micro, always bool) {
		if v != 0 || always {
			b = append(b, ',', '"')
			b = append(b, k...)
			b = append(b, '"', ':')
			b = strconv.AppendFloat(b, v.Float(), 'f', -1, 64)
		}
	}
	str("tenant", e.Tenant)
	str("region", e.Region)
	num("n", e.N)
	num("span_ns", e.Span)
	num("admit_count", e.Admits)
	num("reject_count", e.Rejects)
	num("reject_n", e.Rejected)
	num("id", int64(e.ID))
	num("epoch", int64(e.Epoch))
	limits := e.Kind == Lease || e.Kind == Tenant
	amt("rate", e.Rate, limits)
	amt("burst", e.Burst, limits)
	amt("transfer", e.Transfer, false)
	amt("balance", e.Balance, e.Kind == Return || e.Kind == Credit)
	num("activates_ns", e.Activates)
	num("expires_ns", e.Expires)
	num("cover", int64(e.Cover))
	str("why", e.Why)
	str("mode", e.Mode)
	str("by", e.By)
	num("offset_ns", e.Offset)
	if e.Drift != 0 {
		b = append(b, `,"drift":`...)
		b = strconv.AppendFloat(b, e.Drift, 'g', -1, 64)
	}
	if e.Live != nil {
		b = append(b, `,"live":[`...)
		for i, id := range *e.Live {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, id, 10)
		}
		b = append(b, ']')
	}
	num("fence_ns", e.Fence)
	if len(e.Rates) > 0 {
		b = append(b, `,"rates":{`...)
		for i, k := range slices.Sorted(maps.Keys(e.Rates)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = strconv.AppendFloat(b, e.Rates[k], 'f', -1, 64)
		}
		b = append(b, '}')
	}
	return append(b, '}', '\n')
}

// appendString appends s as a JSON string. strconv.AppendQuote is JSON
// only for printable ASCII (it writes \x7f, which JSON does not have), so
// anything else goes through encoding/json; the names a run writes are
// plain ASCII and take the short path.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// ParseEvent reads one line of an event log. It refuses a line of a kind
// no component writes (ErrUnknownEvent, from ParseKind), an admission
// or refusal of less than one token, and counts that no Counter writes
// (checkCounts).
func ParseEvent(line []byte) (Event, error) {
	var j eventJSON
	if err := json.Unmarshal(line, &j); err != nil {
		return Event{}, fmt.Errorf("eventlog: %w", err)
	}
	e := j.Event
	for _, f := range []struct {
		n   *json.Number
		dst *quota.Micro
		key string
	}{{j.Rate, &e.Rate, "rate"}, {j.Burst, &e.Burst, "burst"}, {j.Transfer, &e.Transfer, "transfer"}, {j.Balance, &e.Balance, "balance"}} {
		if f.n == nil {
			continue
		}
		// Parse as decimal to get the micro-tokens back exactly.
		m, err := parseMicro(f.n.String())
		if err != nil {
			return Event{}, fmt.Errorf("eventlog: field %q: %w", f.key, err)
		}
		*f.dst = m
	}
	if j.Ev == "" {
		return Event{}, fmt.Errorf("eventlog: field \"ev\" missing")
	}
	var err error
	if e.Kind, err = ParseKind(j.Ev); err != nil {
		return Event{}, err
	}
	// An admission of 0 or fewer tokens would take tokens back from the
	// count the bound is checked on; no component writes one.
	if (e.Kind == Admit || e.Kind == Reject) && e.N < 1 {
		return Event{}, fmt.Errorf("eventlog: %v: field \"n\" %d: want 1 or more tokens", e.Kind, e.N)
	}
	if e.Kind == Counts {
		if err := checkCounts(&e); err != nil {
			return Event{}, err
		}
	}
	return e, nil
}

// MaxCountSpan is the longest interval a counts event may cover: the
// checker's slack grows with it (R times the longest interval), and an
// interval beyond a minute would make the bound it proves meaningless.
const MaxCountSpan = time.Minute

// maxCount bounds a count's tallies (1e15 tokens: a billion tokens a
// second for twelve days), far beyond any interval's, so that sums of
// them stay exact in the checker's float64.
const maxCount = 1e15

// checkCounts refuses a counts event that no Counter writes: an interval
// of no length or longer than MaxCountSpan, negative tallies, or tokens
// that their decisions cannot have carried (every decision is of one
// token or more, so n ≥ admit_count and reject_n ≥ reject_count, and tokens need a
// decision); one with no decision at all says nothing.
func checkCounts(e *Event) error {
	bad := func(field string, v int64, want string) error {
		return fmt.Errorf("eventlog: counts: field %q %d: want %s", field, v, want)
	}
	switch {
	case e.Span < 1 || e.Span > int64(MaxCountSpan):
		return bad("span_ns", e.Span, fmt.Sprintf("1 to %d (%v)", int64(MaxCountSpan), MaxCountSpan))
	case e.T-e.Span > e.T:
		return bad("t_ns", e.T, "an interval's end, at least span_ns after the earliest time a log can hold")
	case e.Admits < 0 || e.Admits > maxCount:
		return bad("admit_count", e.Admits, "0 to 1e15 decisions")
	case e.Rejects < 0 || e.Rejects > maxCount:
		return bad("reject_count", e.Rejects, "0 to 1e15 decisions")
	case e.Admits+e.Rejects == 0:
		return bad("admit_count", e.Admits, "admit_count, reject_count or both 1 or more: counts of no decision are not written")
	case e.N < e.Admits || e.N > maxCount || (e.Admits == 0 && e.N != 0):
		return bad("n", e.N, fmt.Sprintf("the tokens of %d admitted decisions: %d to 1e15, and 0 with none", e.Admits, e.Admits))
	case e.Rejected < e.Rejects || e.Rejected > maxCount || (e.Rejects == 0 && e.Rejected != 0):
		return bad("reject_n", e.Rejected, fmt.Sprintf("the tokens of %d refused decisions: %d to 1e15, and 0 with none", e.Rejects, e.Rejects))
	}
	return nil
}

// parseMicro reads a decimal number of tokens with up to six decimals.
func parseMicro(s string) (quota.Micro, error) {
	neg := false
	if s != "" && s[0] == '-' {
		neg, s = true, s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(frac) > 6 {
		return 0, fmt.Errorf("%q: want a number of tokens with at most six decimals", s)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > 1e12 {
		return 0, fmt.Errorf("%q: want a number of tokens up to 1e12", s)
	}
	var f int64
	if frac != "" {
		frac += strings.Repeat("0", 6-len(frac))
		if f, err = strconv.ParseInt(frac, 10, 64); err != nil || f < 0 {
			return 0, fmt.Errorf("%q: bad decimals", s)
		}
	}
	m := quota.Micro(w)*quota.One + quota.Micro(f)
	if neg {
		m = -m
	}
	return m, nil
}

// StartEvents are the start events of a process that serves tenants from
// at: the checker learns each tenant's R, B, regions, E and mode from
// them.
func StartEvents(at int64, tenants []quota.Tenant) []Event {
	out := make([]Event, len(tenants))
	for i, t := range tenants {
		out[i] = Event{T: at, Kind: Start, Tenant: t.Name, Rate: t.Rate, Burst: t.Burst,
			N: int64(len(t.Regions)), Balance: t.Emergency, Why: t.Mode.String()}
	}
	return out
}

// TenantEvent is the tenant event of configuration t, in force from at:
// why is create, update, delete, seed or load, by who made the change.
func TenantEvent(at int64, why, by string, t quota.Tenant) Event {
	return Event{T: at, Kind: Tenant, Tenant: t.Name, Rate: t.Rate, Burst: t.Burst,
		N: int64(len(t.Regions)), Balance: t.Emergency, Mode: t.Mode.String(), Why: why, By: by}
}

// TenantChangeEvents are the lines of an operator's change to a tenant
// (op create, update or delete, by by), so that the checker follows R and
// B over the run: a tenant event of the configuration in force from at —
// the new one, or for a delete the old one, under which the tenant's
// leases count on — and, when the change dropped credit, a credit event
// of minus that many tokens.
func TenantChangeEvents(at int64, op, by string, before, after quota.Tenant, dropped quota.Micro) []Event {
	cfg := after
	if op == "delete" {
		cfg = before
	}
	out := []Event{TenantEvent(at, op, by, cfg)}
	if dropped > 0 {
		out = append(out, Event{T: at, Kind: Credit, Tenant: cfg.Name, Balance: -dropped, Why: "tenant " + op})
	}
	return out
}
