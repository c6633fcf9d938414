package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/chaos"
)

// The global quota lab: POST /api/quota/run computes a run of the chaos
// harness — the real region.Limiter and coordinator.Core in virtual time
// — from a seed, a tenant, the traffic at the start and the actions a
// person took at chosen seconds, and answers it as frames for drawing. Like
// the simulator's /api/run it is a pure function of its request: the
// server keeps nothing, and a share link replays the run.
//
// A run costs tens of milliseconds, and about 0.4 s at the largest tenant
// and traffic the lab allows (docs/benchmarks.md), so the runs computing
// at once are bounded (quotaMaxComputing; the others wait up to quotaWait, then get
// 503 + Retry-After), beside the console's bulkhead that bounds every API
// request.

// The lab's ranges. They keep the largest run to about a million
// requests: R·(offered share)·length / 1.9 tokens a request.
const (
	quotaMinRate, quotaMaxRate   = 10, 1000 // R, tokens a second
	quotaMinBurst, quotaMaxBurst = 10, 100_000
	quotaMaxEmergency            = 1000  // E per region, best-effort
	quotaMinLease, quotaMaxLease = 2, 60 // seconds (above twice the 500 ms skew margin)
	quotaMaxMinutes              = 10
	quotaMaxTraffic              = 300 // % of R offered in all regions together
	quotaMaxActions              = 50
	quotaMaxDown                 = 120 // seconds until a successor runs, or the old one wakes
	quotaMaxDriftPPM             = 500

	quotaFine       = 100 * time.Millisecond // the timeline's step, and the close-up's
	quotaMaxFrames  = 600                    // frames of the whole run: a second each up to 10 minutes
	quotaCloseupPre = 2 * time.Second        // the close-up starts this long before its action
	quotaCloseupMax = 30 * time.Second       // and lasts a lease and 5 s after it, at most this

	quotaMaxComputing = 2 // runs at once: the machine has a few cores, not dozens
	quotaWait         = 10 * time.Second
)

// quotaDefaultTraffic is the lab's opening traffic: 120 % of R, split
// 60/30/10 (with the seed's tenant and five minutes, the other defaults).
var quotaDefaultTraffic = map[string]float64{"eu": 72, "us": 36, "ap": 12}

// quotaAction is an action as the API reads it.
type quotaAction struct {
	At      int                `json:"at_s"`
	Action  string             `json:"action"`
	Region  string             `json:"region,omitempty"`
	Node    string             `json:"node,omitempty"`
	Traffic map[string]float64 `json:"traffic,omitempty"`
	Down    int                `json:"down_s,omitempty"`
	Wake    int                `json:"wake_s,omitempty"`
	Drift   int                `json:"drift_ppm,omitempty"`
}

// quotaRequest is a decoded, validated request.
type quotaRequest struct {
	Seed      uint32             `json:"seed"`
	Rate      int64              `json:"rate"`
	Burst     int64              `json:"burst"`
	Emergency int64              `json:"emergency"`
	Mode      string             `json:"mode"`
	Lease     int64              `json:"lease_s"`
	Minutes   int64              `json:"minutes"`
	Traffic   map[string]float64 `json:"traffic"` // % of R, by region
	Actions   []quotaAction      `json:"actions"`
	Closeup   int                `json:"closeup"` // the action zoomed on; −1 for none

	mode quota.Mode
}

var quotaFields = []string{"seed", "rate", "burst", "emergency", "mode", "lease_s", "minutes", "traffic", "actions", "closeup"}

const quotaExample = `{"seed": 1, "rate": 500, "burst": 6000, "mode": "hard", "lease_s": 10, "minutes": 5, ` +
	`"traffic": {"eu": 72, "us": 36, "ap": 12}, "actions": [{"at_s": 60, "action": "shift", "traffic": {"us": 120}}]}`

// numField reads an integer field of an object, naming it by path.
func numField(f map[string]json.RawMessage, key, path string, def, lo, hi int64, why string) (int64, *apiError) {
	raw, ok := f[key]
	if !ok {
		return def, nil
	}
	v, err := parseInt(raw)
	if err != nil || v < lo || v > hi {
		return 0, badRequest(path, "%s %s: want an integer from %d to %d%s", path, clip(raw), lo, hi, why)
	}
	return v, nil
}

// decodeTraffic reads {"eu": 72, "us": 36, "ap": 12}: % of R by region,
// each 0 to 300 and at most 300 in all; a region left out offers nothing.
func decodeTraffic(raw json.RawMessage, path string) (map[string]float64, *apiError) {
	var f map[string]json.RawMessage
	if json.Unmarshal(raw, &f) != nil || f == nil {
		return nil, badRequest(path, "%s %s: want an object of %% of R by region, like {\"eu\": 72, \"us\": 36, \"ap\": 12}", path, clip(raw))
	}
	out := map[string]float64{}
	total := 0.0
	for _, r := range slices.Sorted(func(yield func(string) bool) {
		for k := range f {
			if !yield(k) {
				return
			}
		}
	}) {
		if !slices.Contains(chaos.DefaultRegions, r) {
			return nil, badRequest(path+"."+clipKey(r), "%s: region %q: want eu, us or ap", path, clip(json.RawMessage(r)))
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(string(f[r])), 64)
		if err != nil || !(v >= 0 && v <= quotaMaxTraffic) {
			return nil, badRequest(path+"."+r, "%s.%s %s: want a number from 0 to %d (%% of R)", path, r, clip(f[r]), quotaMaxTraffic)
		}
		out[r] = v
		total += v
	}
	if total > quotaMaxTraffic+1e-9 {
		return nil, badRequest(path, "%s: %g %% of R in all: want at most %d %%", path, total, quotaMaxTraffic)
	}
	return out, nil
}

// decodeQuota reads and validates a lab request: every field is checked,
// the error names it and its range, and nothing runs on a refusal.
func decodeQuota(body []byte) (quotaRequest, *apiError) {
	f, aerr := decodeObject(body, quotaExample, quotaFields)
	if aerr != nil {
		return quotaRequest{}, aerr
	}
	req := quotaRequest{Mode: "hard", Traffic: quotaDefaultTraffic, Actions: []quotaAction{}}
	seed, aerr := numField(f, "seed", "seed", 1, 0, math.MaxUint32, "")
	if aerr != nil {
		return req, aerr
	}
	req.Seed = uint32(seed)
	if req.Rate, aerr = numField(f, "rate", "rate", 500, quotaMinRate, quotaMaxRate, " tokens a second"); aerr != nil {
		return req, aerr
	}
	if req.Burst, aerr = numField(f, "burst", "burst", 6000, quotaMinBurst, quotaMaxBurst, " tokens"); aerr != nil {
		return req, aerr
	}
	if raw, ok := f["mode"]; ok {
		var m string
		if unmarshal(raw, &m) != nil {
			return req, badRequest("mode", "mode %s: want \"hard\" or \"best-effort\"", clip(raw))
		}
		mode, err := quota.ParseMode(m)
		if err != nil {
			return req, badRequest("mode", "mode %s: want \"hard\" or \"best-effort\"", clip(raw))
		}
		req.Mode, req.mode = m, mode
	}
	defE := int64(0)
	if req.mode == quota.BestEffort {
		defE = 100
	}
	if raw, ok := f["emergency"]; ok && req.mode == quota.Hard {
		if v, err := parseInt(raw); err != nil || v != 0 {
			return req, badRequest("emergency", "emergency %s in hard mode: want 0 (hard mode has no emergency allowance; choose best-effort for one)", clip(raw))
		}
	}
	if req.mode == quota.BestEffort {
		hi := min(quotaMaxEmergency, req.Burst)
		if req.Emergency, aerr = numField(f, "emergency", "emergency", defE, 1, hi, " tokens per region in best-effort mode (at most the burst)"); aerr != nil {
			return req, aerr
		}
	}
	if req.Lease, aerr = numField(f, "lease_s", "lease_s", 10, quotaMinLease, quotaMaxLease, " seconds"); aerr != nil {
		return req, aerr
	}
	if req.Minutes, aerr = numField(f, "minutes", "minutes", 5, 1, quotaMaxMinutes, ""); aerr != nil {
		return req, aerr
	}
	if raw, ok := f["traffic"]; ok {
		if req.Traffic, aerr = decodeTraffic(raw, "traffic"); aerr != nil {
			return req, aerr
		}
	}
	if raw, ok := f["actions"]; ok {
		var items []json.RawMessage
		if unmarshal(raw, &items) != nil {
			return req, badRequest("actions", "actions %s: want an array of actions like {\"at_s\": 60, \"action\": \"partition\", \"region\": \"eu\"}", clip(raw))
		}
		if len(items) > quotaMaxActions {
			return req, badRequest("actions", "%d actions: want at most %d", len(items), quotaMaxActions)
		}
		for i, item := range items {
			a, aerr := decodeQuotaAction(item, i, int(req.Minutes*60))
			if aerr != nil {
				return req, aerr
			}
			req.Actions = append(req.Actions, a)
		}
	}
	closeup, aerr := numField(f, "closeup", "closeup", int64(len(req.Actions)-1), -1, int64(len(req.Actions)-1),
		" (the index of an action, −1 for none)")
	if aerr != nil {
		return req, aerr
	}
	req.Closeup = int(closeup)
	return req, nil
}

var quotaActionFields = map[string][]string{
	"shift":     {"traffic"},
	"partition": {"region"},
	"heal":      {"region"},
	"crash":     {"down_s"},
	"pause":     {"down_s", "wake_s"},
	"skew":      {"node", "drift_ppm"},
}

func decodeQuotaAction(raw json.RawMessage, i, seconds int) (quotaAction, *apiError) {
	path := fmt.Sprintf("actions[%d]", i)
	var f map[string]json.RawMessage
	if json.Unmarshal(raw, &f) != nil || f == nil {
		return quotaAction{}, badRequest(path, "%s %s: want an object like {\"at_s\": 60, \"action\": \"partition\", \"region\": \"eu\"}", path, clip(raw))
	}
	var a quotaAction
	rawKind, ok := f["action"]
	if !ok || unmarshal(rawKind, &a.Action) != nil || quotaActionFields[a.Action] == nil {
		return a, badRequest(path+".action", "%s.action %s: want one of shift, partition, heal, crash, pause, skew", path, clip(rawKind))
	}
	allowed := append([]string{"at_s", "action"}, quotaActionFields[a.Action]...)
	for key := range f {
		if !slices.Contains(allowed, key) {
			return a, badRequest(path+"."+clipKey(key), "%s: unknown field %q: a %s takes %s", path, clip(json.RawMessage(key)), a.Action, strings.Join(allowed, ", "))
		}
	}
	if _, ok := f["at_s"]; !ok {
		return a, badRequest(path+".at_s", "%s.at_s missing: want the second of the run it applies at, 0 to %d", path, seconds-1)
	}
	at, aerr := numField(f, "at_s", path+".at_s", 0, 0, int64(seconds-1), " (a second of the run)")
	if aerr != nil {
		return a, aerr
	}
	a.At = int(at)
	need := func(key string) *apiError {
		if _, ok := f[key]; !ok {
			return badRequest(path+"."+key, "%s.%s missing: a %s needs it", path, key, a.Action)
		}
		return nil
	}
	for _, key := range quotaActionFields[a.Action] {
		if aerr := need(key); aerr != nil {
			return a, aerr
		}
	}
	switch a.Action {
	case "shift":
		if a.Traffic, aerr = decodeTraffic(f["traffic"], path+".traffic"); aerr != nil {
			return a, aerr
		}
	case "partition", "heal":
		if unmarshal(f["region"], &a.Region) != nil || !slices.Contains(chaos.DefaultRegions, a.Region) {
			return a, badRequest(path+".region", "%s.region %s: want \"eu\", \"us\" or \"ap\"", path, clip(f["region"]))
		}
	case "crash", "pause":
		down, aerr := numField(f, "down_s", path+".down_s", 0, 1, quotaMaxDown, " seconds until a successor runs")
		if aerr != nil {
			return a, aerr
		}
		a.Down = int(down)
		if a.Action == "pause" {
			wake, aerr := numField(f, "wake_s", path+".wake_s", 0, 1, quotaMaxDown, " seconds until the paused coordinator wakes")
			if aerr != nil {
				return a, aerr
			}
			a.Wake = int(wake)
		}
	case "skew":
		if unmarshal(f["node"], &a.Node) != nil || (a.Node != "coordinator" && !slices.Contains(chaos.DefaultRegions, a.Node)) {
			return a, badRequest(path+".node", "%s.node %s: want \"eu\", \"us\", \"ap\" or \"coordinator\"", path, clip(f["node"]))
		}
		drift, aerr := numField(f, "drift_ppm", path+".drift_ppm", 0, -quotaMaxDriftPPM, quotaMaxDriftPPM, " ppm (the most NTP slews a clock)")
		if aerr != nil {
			return a, aerr
		}
		a.Drift = int(drift)
	}
	return a, nil
}

// chaosConfig turns a request into the harness's configuration and
// schedule; the harness's own checks (a region cut off twice, a crash
// while the coordinator is down) come back naming the action's field.
func (req quotaRequest) chaosConfig() (chaos.Config, *apiError) {
	cfg := chaos.Config{
		Seed: req.Seed, Mode: req.mode, Duration: time.Duration(req.Minutes) * time.Minute, Sample: quotaFine,
		Tenant: quota.Tenant{
			Name: "acme", Rate: quota.Micro(req.Rate) * quota.One, Burst: quota.Micro(req.Burst) * quota.One,
			Regions: chaos.DefaultRegions, Mode: req.mode, Emergency: quota.Micro(req.Emergency) * quota.One,
			LeaseDuration: time.Duration(req.Lease) * time.Second,
		},
	}
	tokens := func(pct map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for r, p := range pct {
			out[r] = p / 100 * float64(req.Rate)
		}
		return out
	}
	var actions []chaos.Action
	for _, a := range req.Actions {
		kind, _ := chaos.ParseActionKind(a.Action) // decodeQuotaAction checked it
		ca := chaos.Action{At: time.Duration(a.At) * time.Second, Kind: kind, Region: a.Region,
			Down: time.Duration(a.Down) * time.Second, Wake: time.Duration(a.Wake) * time.Second, Drift: float64(a.Drift) * 1e-6}
		if kind == chaos.ActShift {
			ca.Rates = tokens(a.Traffic)
		}
		if kind == chaos.ActSkew && a.Node != "coordinator" {
			ca.Region = a.Node
		}
		actions = append(actions, ca)
	}
	sch, err := chaos.Script(cfg, tokens(req.Traffic), actions)
	if err != nil {
		var ae *chaos.ActionError
		if errors.As(err, &ae) {
			field := map[string]string{"at": "at_s", "rates": "traffic", "down": "down_s", "wake": "wake_s", "drift": "drift_ppm", "kind": "action"}[ae.Field]
			if field == "" {
				field = ae.Field
			}
			path := fmt.Sprintf("actions[%d].%s", ae.Index, field)
			return cfg, badRequest(path, "%s: %s", path, strings.TrimPrefix(ae.Err.Error(), quota.ErrConfig.Error()+": "))
		}
		return cfg, badRequest("", "%v", err)
	}
	cfg.Schedule = sch
	if err := cfg.Validate(); err != nil {
		return cfg, badRequest("", "%v", err) // the ranges above keep a run valid; this is a guard
	}
	return cfg, nil
}

// share is the request as the query of the page's share link: the page
// decodes it and POSTs the same run.
func (req quotaRequest) share() string {
	q := url.Values{}
	q.Set("lab", "quota")
	q.Set("seed", strconv.FormatUint(uint64(req.Seed), 10))
	q.Set("rate", strconv.FormatInt(req.Rate, 10))
	q.Set("burst", strconv.FormatInt(req.Burst, 10))
	q.Set("mode", req.Mode)
	if req.mode == quota.BestEffort {
		q.Set("emergency", strconv.FormatInt(req.Emergency, 10))
	}
	q.Set("lease", strconv.FormatInt(req.Lease, 10))
	q.Set("minutes", strconv.FormatInt(req.Minutes, 10))
	q.Set("traffic", trafficText(req.Traffic))
	var acts []string
	for _, a := range req.Actions {
		s := strconv.Itoa(a.At) + ":" + a.Action
		switch a.Action {
		case "shift":
			s += ":" + trafficText(a.Traffic)
		case "partition", "heal":
			s += ":" + a.Region
		case "crash":
			s += ":" + strconv.Itoa(a.Down)
		case "pause":
			s += ":" + strconv.Itoa(a.Down) + ":" + strconv.Itoa(a.Wake)
		case "skew":
			s += ":" + a.Node + ":" + strconv.Itoa(a.Drift)
		}
		acts = append(acts, s)
	}
	if len(acts) > 0 {
		q.Set("actions", strings.Join(acts, ","))
	}
	return q.Encode()
}

// trafficText writes % of R by region in the regions' order: 72:36:12.
func trafficText(m map[string]float64) string {
	parts := make([]string, len(chaos.DefaultRegions))
	for i, r := range chaos.DefaultRegions {
		parts[i] = strconv.FormatFloat(m[r], 'f', -1, 64)
	}
	return strings.Join(parts, ":")
}

// quotaRegionFrame is a region in a frame: rates in tokens a second over
// the frame, the lease and balance at its end.
type quotaRegionFrame struct {
	Demand   float64 `json:"demand"`   // what the traffic offers, tokens/s
	Offered  float64 `json:"offered"`  // tokens/s requested (random arrivals)
	Admitted float64 `json:"admitted"` // tokens/s admitted
	Refused  float64 `json:"refused"`  // tokens/s refused
	NoLease  float64 `json:"no_lease"` // tokens/s admitted without a lease
	Rate     float64 `json:"rate"`     // the lease's rate share, tokens/s (0: no valid lease)
	Burst    float64 `json:"burst"`    // its burst share, tokens
	Balance  float64 `json:"balance"`  // tokens in the bucket
	Lease    uint64  `json:"lease"`    // the lease's id, 0 for none
	Cut      bool    `json:"cut"`      // cut off from the coordinator during the frame
}

// quotaFrame is a step of the run.
type quotaFrame struct {
	T        float64            `json:"t"`        // seconds from the start
	Regions  []quotaRegionFrame `json:"regions"`  // eu, us, ap
	Admitted float64            `json:"admitted"` // tokens/s, the whole tenant
	Offered  float64            `json:"offered"`
	// Excess is the most tokens admitted beyond R·Δ in a window ending in
	// the frame: the bound holds while it stays ≤ B (+ 3·E).
	Excess float64 `json:"excess"`
	Down   bool    `json:"down"`  // no coordinator could grant during the frame
	Epoch  uint64  `json:"epoch"` // the newest coordinator's
}

type quotaCloseup struct {
	Action int          `json:"action"`
	From   float64      `json:"from_s"`
	Step   float64      `json:"step_s"`
	Frames []quotaFrame `json:"frames"`
}

type quotaVerdict struct {
	Held        bool     `json:"held"`
	Violations  int      `json:"violations"`
	Messages    []string `json:"messages,omitempty"`
	WorstExcess float64  `json:"worst_excess"` // tokens over R·Δ + B in the worst window (≤ 0: under)
	WorstFrom   float64  `json:"worst_from_s"`
	WorstTo     float64  `json:"worst_to_s"`
	Allowed     float64  `json:"allowed_excess"` // 3·E in best-effort mode, else 0
	PeakRate    float64  `json:"peak_rate"`
	PeakBurst   float64  `json:"peak_burst"`
}

type quotaSummary struct {
	Offered     int64   `json:"offered"`  // tokens
	Admitted    int64   `json:"admitted"` // tokens
	Refused     int64   `json:"refused"`
	NoLease     int64   `json:"admitted_without_lease"`
	Utilization float64 `json:"utilization"` // admitted / Σ min(offered, R) over the seconds
	Leases      int     `json:"leases"`
	Epochs      int     `json:"epochs"`
}

type quotaResponse struct {
	Request quotaRequest  `json:"request"` // what was run, defaults filled in
	Regions []string      `json:"regions"`
	Seconds int           `json:"seconds"`
	Step    float64       `json:"step_s"`
	Share   string        `json:"share"`
	Frames  []quotaFrame  `json:"frames"`
	Closeup *quotaCloseup `json:"closeup,omitempty"`
	Verdict quotaVerdict  `json:"verdict"`
	Summary quotaSummary  `json:"summary"`
}

// frames sums the timeline's steps [from, to) into frames of n steps.
func quotaFrames(tl *chaos.Timeline, from, to, n int) []quotaFrame {
	var out []quotaFrame
	step := tl.Step.Seconds() * float64(n)
	for k := from; k < to; k += n {
		chunk := tl.Steps[k:min(k+n, to)]
		last := chunk[len(chunk)-1]
		f := quotaFrame{T: float64(k) * tl.Step.Seconds(), Regions: make([]quotaRegionFrame, len(tl.Regions)), Epoch: last.Epoch}
		secs := step * float64(len(chunk)) / float64(n)
		for _, st := range chunk {
			f.Excess = math.Max(f.Excess, st.Excess)
			f.Down = f.Down || st.Down
			for i, rs := range st.Regions {
				r := &f.Regions[i]
				r.Demand += rs.Demand / float64(len(chunk))
				r.Offered += float64(rs.Offered) / secs
				r.Admitted += float64(rs.Admitted) / secs
				r.Refused += float64(rs.Offered-rs.Admitted) / secs
				r.NoLease += float64(rs.NoLease) / secs
				r.Cut = r.Cut || rs.Cut
			}
		}
		for i, rs := range last.Regions {
			r := &f.Regions[i]
			r.Rate, r.Burst, r.Balance, r.Lease = rs.Rate.Float(), rs.Burst.Float(), rs.Balance.Float(), rs.Lease
			f.Admitted += r.Admitted
			f.Offered += r.Offered
		}
		out = append(out, f)
	}
	return out
}

// runQuota computes a run: the harness's summary and its timeline.
func runQuota(req quotaRequest) (quotaResponse, *apiError) {
	cfg, aerr := req.chaosConfig()
	if aerr != nil {
		return quotaResponse{}, aerr
	}
	tl := chaos.NewTimeline(cfg.Tenant.Regions, cfg.Duration, quotaFine)
	cfg.Log = tl
	sum, err := chaos.Run(cfg)
	if err != nil {
		return quotaResponse{}, &apiError{status: http.StatusInternalServerError, msg: err.Error()}
	}
	seconds := int(cfg.Duration / time.Second)
	per := int(time.Second / quotaFine) // fine steps a second
	n := per * max(1, (seconds+quotaMaxFrames-1)/quotaMaxFrames)
	resp := quotaResponse{
		Request: req, Regions: cfg.Tenant.Regions, Seconds: seconds, Step: float64(n) / float64(per),
		Share:  req.share(),
		Frames: quotaFrames(tl, 0, len(tl.Steps), n),
		Verdict: quotaVerdict{
			Held: sum.OK(), Violations: sum.Violations, Messages: sum.Messages,
			WorstExcess: sum.WorstExcess, WorstFrom: float64(sum.WorstFrom) / 1e9, WorstTo: float64(sum.WorstTo) / 1e9,
			Allowed: sum.Allowed, PeakRate: sum.PeakRate, PeakBurst: sum.PeakBurst,
		},
		Summary: quotaSummary{Admitted: sum.Admitted, Refused: sum.Rejected, NoLease: sum.NoLeaseAdmitted, Leases: sum.Leases, Epochs: sum.Epochs},
	}
	resp.Summary.Offered = sum.Admitted + sum.Rejected
	// Utilization: what was admitted against what could have been, second
	// by second: the offered load, or R when more was offered.
	possible := 0.0
	for k := 0; k < len(tl.Steps); k += per {
		var offered int64
		for _, st := range tl.Steps[k:min(k+per, len(tl.Steps))] {
			for _, rs := range st.Regions {
				offered += rs.Offered
			}
		}
		possible += math.Min(float64(offered), float64(req.Rate))
	}
	if possible > 0 {
		resp.Summary.Utilization = float64(sum.Admitted) / possible
	}
	if req.Closeup >= 0 {
		at := time.Duration(req.Actions[req.Closeup].At) * time.Second
		from := max(0, at-quotaCloseupPre)
		to := min(cfg.Duration, at+min(cfg.Tenant.LeaseDuration+5*time.Second, quotaCloseupMax))
		resp.Closeup = &quotaCloseup{
			Action: req.Closeup, From: from.Seconds(), Step: quotaFine.Seconds(),
			Frames: quotaFrames(tl, int(from/quotaFine), int(to/quotaFine), 1),
		}
	}
	return resp, nil
}

// quotaLab serves POST /api/quota/run, a few runs at a time.
type quotaLab struct {
	maxBody int64
	slots   chan struct{}
	wait    time.Duration
}

func newQuotaLab(maxBody int64) *quotaLab {
	return &quotaLab{maxBody: maxBody, slots: make(chan struct{}, quotaMaxComputing), wait: quotaWait}
}

func (q *quotaLab) run(w http.ResponseWriter, r *http.Request) {
	body, aerr := readBody(r, q.maxBody)
	if aerr != nil {
		aerr.write(w)
		return
	}
	req, aerr := decodeQuota(body)
	if aerr != nil {
		aerr.write(w)
		return
	}
	if !q.acquire(r.Context()) {
		if r.Context().Err() == nil {
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, "", fmt.Sprintf("the quota lab is computing %d runs already; try again in 1 s", quotaMaxComputing))
		}
		return
	}
	resp, aerr := runQuota(req)
	<-q.slots
	if aerr != nil {
		aerr.write(w)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// acquire takes a slot, waiting up to q.wait or until the client leaves.
func (q *quotaLab) acquire(ctx context.Context) bool {
	t := time.NewTimer(q.wait)
	defer t.Stop()
	select {
	case q.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}
