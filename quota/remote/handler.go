package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/afloat/afloat/internal/strictjson"
	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
)

// Backend is what the handler serves: a coordinator.Server. A body's
// calls go to it as one batch: one turn of its lock, their writes
// together.
type Backend interface {
	RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error)
	ReturnBatch(ctx context.Context, rets []quota.Return) ([]error, error)
	Epoch() uint64
	// Tenants lists the tenants (GET /v1/region/tenants), and
	// TenantsVersion names that list as it is now: it changes whenever
	// the list does, so that a region polling it is answered "not
	// modified" rather than sent 100,000 tenants every few seconds.
	Tenants() []coordinator.TenantRecord
	TenantsVersion() string
	// Attach, Detach and Verify fence the regions' agent incarnations
	// (coordinator.Core.Attach).
	Attach(ctx context.Context, region, agent string) (uint64, error)
	Detach(ctx context.Context, region string, incarnation uint64) error
	Verify(region string, incarnation uint64) error
}

// Leadership says who serves: the backend while this process leads, or
// nil and the leader's URL (empty when unknown) while it follows.
type Leadership func() (b Backend, leader string)

// HandlerConfig configures Handler.
type HandlerConfig struct {
	// Tokens maps each region to its bearer token, every token at least
	// 16 bytes; "" for a region that authenticates with its certificate
	// only (ClientCerts). Required unless Keyring is given.
	Tokens map[string]string
	// Keyring, if not nil, holds the regions' tokens instead of Tokens,
	// several a region while one is rotated, and can be changed while the
	// handler serves (a coordinator's SIGHUP).
	Keyring *Keyring
	// ClientCerts says that the listener verifies client certificates
	// against a CA the operator gave (--client-ca): a region may then
	// authenticate with a certificate that names it (RegionURI) instead
	// of a token. Without it, certificates are not looked at.
	ClientCerts bool
	// Lead says who serves; required.
	Lead Leadership
	// Nudges holds the nudges for each region until it next calls; may
	// be nil (no nudges).
	Nudges *Mailbox
	// Logger logs refused credentials; nil logs nothing.
	Logger *slog.Logger
	// Timeout bounds the wait for the ledger; default 5 s. A renewal or
	// return body's patience_ms, if shorter, bounds it instead.
	Timeout time.Duration
}

// Handler serves the coordinator's API (see wire.go). It is safe for
// concurrent use.
func Handler(cfg HandlerConfig) (http.Handler, error) {
	if cfg.Lead == nil {
		return nil, fmt.Errorf("%w: remote: no leadership function", quota.ErrConfig)
	}
	if cfg.Keyring == nil {
		if len(cfg.Tokens) == 0 {
			return nil, fmt.Errorf("%w: remote: no region tokens", quota.ErrConfig)
		}
		tokens := make(map[string][]string, len(cfg.Tokens))
		for r, tok := range cfg.Tokens {
			if tok == "" && cfg.ClientCerts {
				tokens[r] = nil // its certificate only
				continue
			}
			tokens[r] = []string{tok}
		}
		k, err := NewKeyring(tokens)
		if err != nil {
			return nil, err
		}
		cfg.Keyring = k
	}
	if len(*cfg.Keyring.tokens.Load()) == 0 {
		return nil, fmt.Errorf("%w: remote: no regions", quota.ErrConfig)
	}
	if !cfg.ClientCerts {
		for r, toks := range *cfg.Keyring.tokens.Load() {
			if len(toks) == 0 {
				return nil, fmt.Errorf("%w: remote: region %q has no token, and client certificates are not verified: give it a token, or a client CA", quota.ErrConfig, r)
			}
		}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	h := &handler{cfg: cfg}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/renew", h.renew)
	mux.HandleFunc("POST /v1/return", h.ret)
	mux.HandleFunc("GET /v1/region/tenants", h.tenants)
	mux.HandleFunc("POST /v1/region/attach", h.attach)
	mux.HandleFunc("POST /v1/region/detach", h.detach)
	return mux, nil
}

type handler struct {
	cfg HandlerConfig
}

// region authenticates the request: the region its verified client
// certificate names (with ClientCerts), or the region whose token it
// carries. A request with both must name the same region with each: a
// certificate of one region and a token of another is refused, not read
// as either. Every token is compared, in constant time, so that neither
// the token's bytes nor which region it matched shows in the time taken.
func (h *handler) region(r *http.Request) (string, bool) {
	byCert := ""
	if h.cfg.ClientCerts && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		byCert = RegionOfCert(r.TLS.VerifiedChains[0][0])
		if !h.cfg.Keyring.known(byCert) {
			byCert = "" // names no region of the config
		}
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return byCert, byCert != ""
	}
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		return "", false
	}
	found := h.cfg.Keyring.Match(tok)
	if byCert != "" && found != byCert {
		return "", false
	}
	return found, found != ""
}

func refuse(w http.ResponseWriter, code int, ref Refusal) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if code == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(ref) //nolint:errcheck // the client went away
}

// begin authenticates, checks leadership and reads the body into v.
func (h *handler) begin(w http.ResponseWriter, r *http.Request, v any) (string, Backend, bool) {
	region, b, ok := h.authLead(w, r)
	if !ok {
		return "", nil, false
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		refuse(w, http.StatusUnsupportedMediaType, Refusal{Error: fmt.Sprintf("remote: Content-Type %q: want application/json", ct)})
		return "", nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			refuse(w, http.StatusRequestEntityTooLarge, Refusal{Error: fmt.Sprintf("remote: body over %d bytes", MaxBody)})
		} else {
			refuse(w, http.StatusBadRequest, Refusal{Error: "remote: reading the body: " + err.Error()})
		}
		return "", nil, false
	}
	// Strictly: a key given twice, null, a fraction in an integer are
	// refused, never read as one of their meanings (internal/strictjson).
	if rb, ok := v.(*RenewBody); ok {
		err = decodeRenewBody(body, rb) // as strictjson.Decode, faster
	} else {
		err = strictjson.Decode(body, v)
	}
	if err != nil {
		refuse(w, http.StatusBadRequest, Refusal{Error: "remote: body: " + err.Error()})
		return "", nil, false
	}
	return region, b, true
}

// authLead authenticates the region and checks that this coordinator
// leads; when not, it has answered.
func (h *handler) authLead(w http.ResponseWriter, r *http.Request) (string, Backend, bool) {
	region, ok := h.region(r)
	if !ok {
		if h.cfg.Logger != nil {
			h.cfg.Logger.Warn("quota coordinator: refused a request without a valid region token",
				"remote", r.RemoteAddr, "path", r.URL.Path, "authorization", presence(r.Header.Get("Authorization")),
				"certificate", certPresence(r, h.cfg.ClientCerts))
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="afloat-quota"`)
		msg := "remote: a valid region token is required (Authorization: Bearer TOKEN)"
		if h.cfg.ClientCerts {
			msg = "remote: a valid region token (Authorization: Bearer TOKEN) or a client certificate naming the region (" + RegionURI("NAME") + ") is required"
		}
		refuse(w, http.StatusUnauthorized, Refusal{Error: msg})
		return "", nil, false
	}
	b, leader := h.cfg.Lead()
	if b == nil {
		refuse(w, http.StatusServiceUnavailable, Refusal{Error: "remote: this coordinator is not the leader", Leader: leader})
		return "", nil, false
	}
	return region, b, true
}

// tenants answers GET /v1/region/tenants: the tenants whose traffic
// enters the caller's region, so that its agent serves the tenants
// operators create and stops serving those they delete. The region is
// the token's: a region learns its own tenants, never another's.
func (h *handler) tenants(w http.ResponseWriter, r *http.Request) {
	region, b, ok := h.authLead(w, r)
	if !ok {
		return
	}
	// The version first, then the list: a change between the two is
	// sent again at the next poll, never missed.
	etag := `"` + b.TenantsVersion() + `"`
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	ans := RegionTenants{Region: region, Tenants: []RegionTenant{}}
	for _, rec := range b.Tenants() {
		if rec.HasRegion(region) {
			ans.Tenants = append(ans.Tenants, RegionTenant{Name: rec.Name, Version: rec.Version, Costs: rec.Costs})
		}
	}
	ans.Epoch, ans.Version = b.Epoch(), strings.Trim(etag, `"`)
	writeJSON(w, ans)
}

// certPresence says, for the log, what client certificate a refused
// request came with.
func certPresence(r *http.Request, verified bool) string {
	switch {
	case !verified:
		return "not asked for"
	case r.TLS == nil || len(r.TLS.PeerCertificates) == 0:
		return "missing"
	case RegionOfCert(r.TLS.PeerCertificates[0]) == "":
		return "names no region"
	}
	return "names a region"
}

func presence(s string) string {
	if s == "" {
		return "missing"
	}
	return "wrong"
}

// batchOf checks a batch of n items (named what in the messages) before
// anything is done: at most MaxBatch, and every item for the region whose
// token came with it; otherwise it refuses and says false.
func batchOf(w http.ResponseWriter, what, region string, n int, regionOf func(int) string) bool {
	if n > MaxBatch {
		refuse(w, http.StatusRequestEntityTooLarge, Refusal{Error: fmt.Sprintf("remote: %d %s: want at most %d", n, what, MaxBatch)})
		return false
	}
	for i := range n {
		if r := regionOf(i); r != region {
			refuse(w, http.StatusForbidden, Refusal{Error: fmt.Sprintf("remote: %s[%d] is for region %q; this token is region %q's", what, i, r, region)})
			return false
		}
	}
	return true
}

// incarnationOf checks a body's incarnation and copies it into its n
// calls: a body with calls needs one (over the network no caller is
// exempt from attaching), and a call's own, if given, must be the body's.
// Otherwise it refuses and says false.
func incarnationOf(w http.ResponseWriter, what string, body uint64, n int, item func(int) *uint64) bool {
	if body == 0 && n > 0 {
		refuse(w, http.StatusBadRequest, Refusal{Error: "remote: incarnation 0: attach first (POST /v1/region/attach) and send the incarnation it returns"})
		return false
	}
	for i := range n {
		p := item(i)
		if *p != 0 && *p != body {
			refuse(w, http.StatusBadRequest, Refusal{Error: fmt.Sprintf("remote: %s[%d].incarnation: want the body's incarnation or none", what, i)})
			return false
		}
		*p = body
	}
	return true
}

// deadline is when the backend must have answered a body received at
// received with patience_ms p: the lesser of three quarters of the
// caller's patience and the handler's Timeout. The quarter left is for
// the trip: the body's way here, which started before received, and the
// answer's way back — a grant written and answered after its caller has
// given up is a lease nobody installs, counting against its tenant until
// it expires, and a loaded machine stretches both trips. A p out of range
// is refused, and false.
func (h *handler) deadline(w http.ResponseWriter, received time.Time, p int64) (time.Time, bool) {
	if p < 0 || p > MaxPatience.Milliseconds() {
		refuse(w, http.StatusBadRequest, Refusal{Error: fmt.Sprintf("remote: patience_ms %d: want 1 to %d (milliseconds), or none", p, MaxPatience.Milliseconds())})
		return time.Time{}, false
	}
	wait := h.cfg.Timeout
	if p > 0 {
		wait = min(wait, time.Duration(p)*time.Millisecond*3/4)
	}
	return received.Add(wait), true
}

// patienceFor is the patience a caller must claim for the backend to
// have need before its deadline (deadline's inverse), rounded up to the
// millisecond, at most MaxPatience; 0 for 0.
func patienceFor(need time.Duration) time.Duration {
	if need <= 0 {
		return 0
	}
	return min(MaxPatience, (need*4/3 + time.Millisecond - 1).Truncate(time.Millisecond))
}

func (h *handler) renew(w http.ResponseWriter, r *http.Request) {
	received := time.Now()
	var body RenewBody
	region, b, ok := h.begin(w, r, &body)
	if !ok {
		return
	}
	deadline, ok := h.deadline(w, received, body.PatienceMS)
	if !ok {
		return
	}
	if !batchOf(w, "requests", region, len(body.Requests), func(i int) string { return body.Requests[i].Region }) ||
		!incarnationOf(w, "requests", body.Incarnation, len(body.Requests), func(i int) *uint64 { return &body.Requests[i].Incarnation }) {
		return
	}
	if len(body.Requests) == 0 && body.Incarnation != 0 {
		// A poll: it tells an agent with no tenant to renew that another
		// agent has taken its region.
		if err := b.Verify(region, body.Incarnation); err != nil {
			refuse(w, http.StatusConflict, Refusal{Error: err.Error(), Code: codeOf(err)})
			return
		}
	}
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	ans := Answer{Results: make([]Result, len(body.Requests))}
	// Every request at once: their writes go into the same transactions.
	results, err := b.RenewBatch(ctx, body.Requests)
	if err != nil {
		refuseCall(w, err)
		return
	}
	for i, r := range results {
		if r.Err != nil {
			ans.Results[i] = Result{Error: r.Err.Error(), Code: codeOf(r.Err)}
			var busy *quota.BusyError
			if errors.As(r.Err, &busy) {
				ans.Results[i].PatienceMS = patienceFor(busy.Need).Milliseconds()
			}
			continue
		}
		g := r.Grant
		ans.Results[i] = Result{Grant: &g}
	}
	ans.Epoch = b.Epoch()
	// Nudges go to the agent that holds the region only: an agent
	// standing by, or anyone else with the token, would take them from it.
	if h.cfg.Nudges != nil && body.Incarnation != 0 && b.Verify(region, body.Incarnation) == nil {
		ans.Nudges = h.cfg.Nudges.Take(region)
	}
	writeAnswer(w, ans)
}

func (h *handler) ret(w http.ResponseWriter, r *http.Request) {
	received := time.Now()
	var body ReturnBody
	region, b, ok := h.begin(w, r, &body)
	if !ok {
		return
	}
	deadline, ok := h.deadline(w, received, body.PatienceMS)
	if !ok {
		return
	}
	if !batchOf(w, "returns", region, len(body.Returns), func(i int) string { return body.Returns[i].Region }) ||
		!incarnationOf(w, "returns", body.Incarnation, len(body.Returns), func(i int) *uint64 { return &body.Returns[i].Incarnation }) {
		return
	}
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	ans := Answer{Results: make([]Result, len(body.Returns))}
	errs, err := b.ReturnBatch(ctx, body.Returns)
	if err != nil {
		refuseCall(w, err)
		return
	}
	for i, err := range errs {
		if err != nil {
			ans.Results[i] = Result{Error: err.Error(), Code: codeOf(err)}
		}
	}
	ans.Epoch = b.Epoch()
	writeAnswer(w, ans)
}

// refuseCall answers a call the backend refused as a whole: 503 with code
// busy and the Retry-After the coordinator asks for (quota.BusyError), or
// 503 unavailable: the region backs off as a whole and asks again.
func refuseCall(w http.ResponseWriter, err error) {
	var busy *quota.BusyError
	if errors.As(err, &busy) {
		w.Header().Set("Retry-After", strconv.FormatInt(max(1, int64(math.Ceil(busy.Wait.Seconds()))), 10))
		refuse(w, http.StatusServiceUnavailable, Refusal{Error: err.Error(), Code: CodeBusy, RetryAfterMS: busy.Wait.Milliseconds(),
			PatienceMS: patienceFor(busy.Need).Milliseconds()})
		return
	}
	refuse(w, http.StatusServiceUnavailable, Refusal{Error: err.Error(), Code: codeOf(err)})
}

// attach answers POST /v1/region/attach: a new incarnation of the token's
// region's agent, or 409 while another holds the region.
func (h *handler) attach(w http.ResponseWriter, r *http.Request) {
	var body AttachBody
	region, b, ok := h.begin(w, r, &body)
	if !ok {
		return
	}
	if !printable(body.Agent) {
		refuse(w, http.StatusBadRequest, Refusal{Error: fmt.Sprintf("remote: agent %q: want 1 to %d printable characters (host:pid, say)", body.Agent, MaxAgent)})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
	defer cancel()
	inc, err := b.Attach(ctx, region, body.Agent)
	var held *quota.HeldError
	switch {
	case errors.As(err, &held):
		if h.cfg.Logger != nil {
			h.cfg.Logger.Warn("quota coordinator: refused a second agent for a region; it may attach once the holder's leases end",
				"region", region, "agent", body.Agent, "holder", held.Holder, "wait", held.Wait)
		}
		w.Header().Set("Retry-After", strconv.FormatInt(max(1, int64(math.Ceil(held.Wait.Seconds()))), 10))
		refuse(w, http.StatusConflict, Refusal{Error: err.Error(), Code: CodeRegionHeld, Holder: held.Holder})
	case err != nil:
		refuse(w, http.StatusServiceUnavailable, Refusal{Error: "remote: attach: " + err.Error()})
	default:
		if h.cfg.Logger != nil {
			h.cfg.Logger.Info("quota coordinator: a region agent attached", "region", region, "agent", body.Agent)
		}
		writeJSON(w, AttachAnswer{Epoch: b.Epoch(), Incarnation: inc})
	}
}

// detach answers POST /v1/region/detach: the incarnation's hold ends, and
// every lease of the region with it.
func (h *handler) detach(w http.ResponseWriter, r *http.Request) {
	var body DetachBody
	region, b, ok := h.begin(w, r, &body)
	if !ok {
		return
	}
	if body.Incarnation == 0 {
		refuse(w, http.StatusBadRequest, Refusal{Error: "remote: incarnation 0: want the incarnation the attach returned"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
	defer cancel()
	switch err := b.Detach(ctx, region, body.Incarnation); {
	case errors.Is(err, quota.ErrSuperseded):
		refuse(w, http.StatusConflict, Refusal{Error: err.Error(), Code: CodeSuperseded})
	case err != nil:
		refuse(w, http.StatusServiceUnavailable, Refusal{Error: "remote: detach: " + err.Error()})
	default:
		if h.cfg.Logger != nil {
			h.cfg.Logger.Info("quota coordinator: a region agent detached", "region", region)
		}
		writeAnswer(w, Answer{Epoch: b.Epoch(), Results: []Result{}})
	}
}

// printable says whether s is 1 to MaxAgent bytes of UTF-8 without
// control characters: it goes into logs and other agents' errors.
func printable(s string) bool {
	if s == "" || len(s) > MaxAgent || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client went away
}

// Mailbox keeps the nudges for each region until it next calls: a
// coordinator cannot call a region (regions may sit behind NAT, and a
// region never waits on the coordinator per request), so nudges ride on
// answers. It keeps at most one per tenant and region. It is safe for
// concurrent use; the zero value is ready.
type Mailbox struct {
	mu  sync.Mutex
	box map[string]map[string]quota.Nudge // region → tenant → nudge
}

// Put keeps n for its region.
func (m *Mailbox) Put(n quota.Nudge) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.box == nil {
		m.box = map[string]map[string]quota.Nudge{}
	}
	if m.box[n.Region] == nil {
		m.box[n.Region] = map[string]quota.Nudge{}
	}
	m.box[n.Region][n.Tenant] = n
}

// Take returns and forgets the region's nudges.
func (m *Mailbox) Take(region string) []quota.Nudge {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []quota.Nudge
	for _, n := range m.box[region] {
		out = append(out, n)
	}
	delete(m.box, region)
	return out
}
