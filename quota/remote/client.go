package remote

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/afloat/afloat/quota"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// Endpoints are the coordinators' base URLs (http://host:port); at
	// least one. The client follows the leader among them.
	Endpoints []string
	// Region and Token: this region and its bearer token. The token may
	// be left out when TLS presents a client certificate that names the
	// region (RegionURI) to coordinators that verify it.
	Region, Token string
	// TLS, if not nil, is the TLS config the default HTTP client uses:
	// the coordinators' CA (RootCAs; nil: the system's roots) and the
	// region's client certificate. With it, an endpoint given as
	// host:port is https://host:port and an http:// one is refused: the
	// token would cross the network in clear.
	TLS *tls.Config
	// HTTP is the HTTP client; default one with a 5 s timeout (and TLS).
	HTTP *http.Client
	// OnNudge receives the nudges that ride on answers; may be nil.
	OnNudge func(quota.Nudge)
	// Agent describes this agent when it attaches (AttachBody); default
	// the host name and process id, "host:pid".
	Agent string
	// Incarnation, if not 0, is one handed over by the region's previous
	// agent, which stopped spending under it (region.Handover): the
	// client renews as it without attaching. The coordinator verifies it
	// as any incarnation; should it no longer hold the region, the client
	// attaches as usual.
	Incarnation uint64
}

// Client is a region's side of the API: it implements region.Coordinator.
// A batch travels in one HTTP request (split at MaxBatch), with the
// caller's patience — the time to its context's deadline — so that the
// coordinator drops what it cannot answer in time; region.Limiter.Run
// batches per region, so that a region renewing thousands of tenants
// sends a few requests, not thousands. It is safe for concurrent use.
//
// The client attaches the region before its first call (see wire.go) and
// keeps the incarnation it is given. When the coordinator answers that it
// no longer holds the region (quota.ErrSuperseded), it forgets it and
// attaches again with the next call — which is refused with a
// *quota.HeldError while another agent holds the region, and then tried
// again about once a second (or when the holder's last lease stops
// counting, if sooner): meanwhile every call fails at once with that
// error, and the region holds no lease. Detach ends the hold, after the leases went back.
type Client struct {
	cfg ClientConfig
	l   leaders // the coordinators, their leader followed

	inc atomic.Uint64 // the incarnation; 0 until attached
	// attachMu makes one attach at a time: calls that need one wait for
	// the attach under way rather than each start one (a second would
	// supersede the first). It is held across that HTTP request only.
	attachMu  sync.Mutex
	held      *quota.HeldError // the last refusal, until heldUntil
	heldUntil time.Time
	detached  bool // Detach was called: no attach again
}

// attachRetry is how soon a client whose attach was refused asks again,
// at most: a standby agent takes over within about this long once the
// holder detaches, at the cost of one small request a second.
const attachRetry = time.Second

// NewClient checks the configuration and returns a client.
func NewClient(cfg ClientConfig) (*Client, error) {
	endpoints, err := checkEndpoints(cfg.Endpoints, cfg.TLS != nil)
	if err != nil {
		return nil, err
	}
	cfg.Endpoints = endpoints
	if cfg.Region == "" || (cfg.Token == "" && !hasCert(cfg.TLS)) {
		return nil, fmt.Errorf("%w: remote: a region and its token (or a client certificate naming it) are required", quota.ErrConfig)
	}
	if cfg.HTTP == nil {
		cfg.HTTP = httpClient(5*time.Second, cfg.TLS)
	}
	if cfg.Agent == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "unknown-host"
		}
		cfg.Agent = host + ":" + strconv.Itoa(os.Getpid())
	}
	if !printable(cfg.Agent) {
		return nil, fmt.Errorf("%w: remote: agent %q: want 1 to %d printable characters", quota.ErrConfig, cfg.Agent, MaxAgent)
	}
	c := &Client{cfg: cfg}
	c.inc.Store(cfg.Incarnation)
	c.l.endpoints, c.l.region, c.l.http, c.l.limit = endpoints, cfg.Region, cfg.HTTP, 4*MaxBody
	c.l.token.Store(&cfg.Token)
	return c, nil
}

// SetToken replaces the region's token from the next request on: the
// agent's SIGHUP, in a rotation (docs/quota/operations.md, "Rotating a
// token"),
// once the coordinators accept the new token besides the old. "" sends
// none, for a client certificate that names the region. Calls under way
// keep the token they were sent with.
func (c *Client) SetToken(token string) error {
	if token == "" && !hasCert(c.cfg.TLS) {
		return fmt.Errorf("%w: remote: a token is required without a client certificate", quota.ErrConfig)
	}
	c.l.token.Store(&token)
	return nil
}

// Incarnation is the incarnation the client holds the region as; 0 while
// it is not attached.
func (c *Client) Incarnation() uint64 { return c.inc.Load() }

// attach returns the client's incarnation, attaching the region if it
// has none: POST /v1/region/attach. While the last attach was refused and
// its holder's leases may still count, it fails at once with that
// refusal (a *quota.HeldError), without asking.
func (c *Client) attach(ctx context.Context) (uint64, error) {
	if inc := c.inc.Load(); inc != 0 {
		return inc, nil
	}
	c.attachMu.Lock()
	defer c.attachMu.Unlock()
	if inc := c.inc.Load(); inc != 0 {
		return inc, nil // attached while this call waited
	}
	if c.detached {
		return 0, errors.New("remote: the client has detached the region")
	}
	if c.held != nil && time.Now().Before(c.heldUntil) {
		return 0, c.held
	}
	data, err := json.Marshal(AttachBody{Agent: c.cfg.Agent})
	if err != nil {
		return 0, err
	}
	var ans AttachAnswer
	_, err = c.l.do(ctx, http.MethodPost, "/v1/region/attach", data, func(raw []byte) error {
		if err := json.Unmarshal(raw, &ans); err != nil {
			return fmt.Errorf("remote: attach answer: %w", err)
		}
		if ans.Incarnation == 0 {
			return errors.New("remote: attach answer without an incarnation")
		}
		return nil
	})
	var held *quota.HeldError
	if errors.As(err, &held) {
		c.held, c.heldUntil = held, time.Now().Add(min(held.Wait, attachRetry))
	}
	if err != nil {
		return 0, err
	}
	c.held = nil
	c.inc.Store(ans.Incarnation)
	return ans.Incarnation, nil
}

// superseded forgets incarnation inc after the coordinator said it no
// longer holds the region: the next call attaches again.
func (c *Client) superseded(inc uint64) { c.inc.CompareAndSwap(inc, 0) }

// Detach ends the client's hold on the region (POST /v1/region/detach):
// every lease of the region stops counting, and another agent may attach
// at once. Call it only once the region spends nothing more — after
// region.Limiter.Run has returned, having given its leases back. A client
// that holds nothing, or whose incarnation was superseded meanwhile, has
// nothing to detach: nil. The client attaches no more afterwards.
func (c *Client) Detach(ctx context.Context) error {
	c.attachMu.Lock()
	defer c.attachMu.Unlock()
	c.detached = true
	inc := c.inc.Swap(0)
	if inc == 0 {
		return nil
	}
	data, err := json.Marshal(DetachBody{Incarnation: inc})
	if err != nil {
		return err
	}
	_, err = c.l.do(ctx, http.MethodPost, "/v1/region/detach", data, func([]byte) error { return nil })
	if errors.Is(err, quota.ErrSuperseded) {
		return nil
	}
	return err
}

// RenewBatch implements region.Coordinator: POST /v1/renew, MaxBatch
// requests a body, each answered in order. An error means nothing was
// answered: the region could not attach, or the first body failed as a
// whole (a *quota.BusyError when the coordinator sheds load). A body
// after the first that fails as a whole fails its requests one by one,
// as the ones before were answered.
func (c *Client) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	out := make([]quota.Result, len(reqs))
	for from := 0; from < len(reqs); from += MaxBatch {
		part := reqs[from:min(from+MaxBatch, len(reqs))]
		err := c.renewBody(ctx, part, out[from:])
		if err != nil && from == 0 {
			return nil, err
		}
		if err != nil {
			for i := range part {
				out[from+i] = quota.Result{Err: err}
			}
		}
	}
	return out, nil
}

// renewBody sends one body of renewals and puts their answers in out.
func (c *Client) renewBody(ctx context.Context, reqs []quota.Request, out []quota.Result) error {
	inc, err := c.attach(ctx)
	if err != nil {
		return err
	}
	patience, err := patienceOf(ctx, c.cfg.HTTP)
	if err != nil {
		return err
	}
	ans, k, err := c.send(ctx, "/v1/renew", RenewBody{Incarnation: inc, Requests: reqs, PatienceMS: patience}, len(reqs))
	if err != nil {
		return err
	}
	c.after(ans, k, inc)
	for i, r := range ans.Results {
		switch e := errOf(r); {
		case e != nil:
			out[i] = quota.Result{Err: e}
		case r.Grant == nil:
			out[i] = quota.Result{Err: fmt.Errorf("remote: result %d has neither a grant nor an error", i)}
		default:
			out[i] = quota.Result{Grant: *r.Grant}
		}
	}
	return nil
}

// ReturnBatch implements region.Coordinator for returns: POST /v1/return,
// as RenewBatch.
func (c *Client) ReturnBatch(ctx context.Context, rets []quota.Return) ([]error, error) {
	out := make([]error, len(rets))
	for from := 0; from < len(rets); from += MaxBatch {
		part := rets[from:min(from+MaxBatch, len(rets))]
		err := c.returnBody(ctx, part, out[from:])
		if err != nil && from == 0 {
			return nil, err
		}
		if err != nil {
			for i := range part {
				out[from+i] = err
			}
		}
	}
	return out, nil
}

// returnBody sends one body of returns and puts their answers in out.
func (c *Client) returnBody(ctx context.Context, rets []quota.Return, out []error) error {
	inc, err := c.attach(ctx)
	if err != nil {
		return err
	}
	patience, err := patienceOf(ctx, c.cfg.HTTP)
	if err != nil {
		return err
	}
	ans, k, err := c.send(ctx, "/v1/return", ReturnBody{Incarnation: inc, Returns: rets, PatienceMS: patience}, len(rets))
	if err != nil {
		return err
	}
	c.after(ans, k, inc)
	for i, r := range ans.Results {
		out[i] = errOf(r)
	}
	return nil
}

// patienceOf is what a body says of the caller's patience: the
// milliseconds to ctx's deadline, or to the HTTP client's timeout if
// sooner, from 1 to MaxPatience; 0 (absent) with neither. A deadline
// already passed is ctx's error: nothing is sent.
func patienceOf(ctx context.Context, hc *http.Client) (int64, error) {
	var wait time.Duration
	if dl, ok := ctx.Deadline(); ok {
		if wait = time.Until(dl); wait <= 0 {
			return 0, fmt.Errorf("remote: %w", context.DeadlineExceeded)
		}
	}
	if t := hc.Timeout; t > 0 && (wait == 0 || t < wait) {
		wait = t
	}
	if wait == 0 {
		return 0, nil
	}
	return min(max(wait.Milliseconds(), 1), MaxPatience.Milliseconds()), nil
}

// Renew renews one request: RenewBatch of one, for tests and callers
// with a single tenant.
func (c *Client) Renew(ctx context.Context, req quota.Request) (quota.Grant, error) {
	res, err := c.RenewBatch(ctx, []quota.Request{req})
	if err != nil {
		return quota.Grant{}, err
	}
	return res[0].Grant, res[0].Err
}

// Return gives one lease back: ReturnBatch of one.
func (c *Client) Return(ctx context.Context, ret quota.Return) error {
	errs, err := c.ReturnBatch(ctx, []quota.Return{ret})
	if err != nil {
		return err
	}
	return errs[0]
}

// Poll sends an empty renewal: it picks up the region's nudges, and says
// whether a leader answers and this client holds the region (attaching
// first if it does not; a *quota.HeldError while another agent holds it).
func (c *Client) Poll(ctx context.Context) error {
	inc, err := c.attach(ctx)
	if err != nil {
		return err
	}
	ans, _, err := c.send(ctx, "/v1/renew", RenewBody{Incarnation: inc, Requests: []quota.Request{}}, 0)
	if errors.Is(err, quota.ErrSuperseded) {
		c.superseded(inc) // another agent took the region: the next call attaches again
	}
	if err == nil && c.cfg.OnNudge != nil {
		for _, nd := range ans.Nudges {
			c.cfg.OnNudge(nd)
		}
	}
	return err
}

// after reads what an answer from endpoint k says of the client's state:
// an incarnation superseded is forgotten (the next call attaches again);
// an epoch the endpoint cannot verify is one the region has seen from a
// newer leader, so the next call goes to the next endpoint — the usual
// leader-following takes it from there. Nudges are delivered only once
// the incarnation is known to hold the region.
func (c *Client) after(ans Answer, k int, inc uint64) {
	behind := false
	for _, r := range ans.Results {
		switch r.Code {
		case CodeSuperseded:
			c.superseded(inc)
		case CodeUnverifiedEpoch:
			behind = true
		}
	}
	if behind {
		c.l.leader.CompareAndSwap(int64(k), int64((k+1)%len(c.l.endpoints)))
	}
	if c.cfg.OnNudge != nil {
		for _, nd := range ans.Nudges {
			c.cfg.OnNudge(nd)
		}
	}
}

// send posts body to the leader (see leaders.do) and checks the answer; it
// says which endpoint answered.
func (c *Client) send(ctx context.Context, path string, body any, want int) (Answer, int, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return Answer{}, 0, err
	}
	var ans Answer
	k, err := c.l.do(ctx, http.MethodPost, path, data, func(raw []byte) error {
		var err error
		if ans, err = decodeAnswer(raw, want); err != nil {
			return fmt.Errorf("remote: answer: %w", err)
		}
		return nil
	})
	if err != nil {
		return Answer{}, 0, err
	}
	if len(ans.Results) != want {
		return Answer{}, 0, fmt.Errorf("remote: %d results for %d calls", len(ans.Results), want)
	}
	return ans, k, nil
}

// Tenants asks the leader for the tenants whose traffic enters this
// region (GET /v1/region/tenants): an agent polls it to serve tenants
// created through the coordinator's API and to drop deleted ones. known
// is the version of the list the caller has (RegionTenants.Version; ""
// for none): while the list is that one, the leader answers 304 and
// Tenants reports changed false, with no list. An answer for another
// region, or with a tenant twice or unnamed, is an error: the agent keeps
// the set it has.
func (c *Client) Tenants(ctx context.Context, known string) (ans RegionTenants, changed bool, err error) {
	if known != "" {
		ctx = context.WithValue(ctx, ifNoneMatch{}, `"`+known+`"`)
	}
	_, err = c.l.do(ctx, http.MethodGet, "/v1/region/tenants", nil, func(raw []byte) error {
		if err := json.Unmarshal(raw, &ans); err != nil {
			return fmt.Errorf("remote: tenants answer: %w", err)
		}
		return nil
	})
	if errors.Is(err, errNotModified) {
		return RegionTenants{}, false, nil
	}
	if err != nil {
		return RegionTenants{}, false, err
	}
	if ans.Region != c.cfg.Region {
		return RegionTenants{}, false, fmt.Errorf("remote: tenants answer for region %q, want %q", ans.Region, c.cfg.Region)
	}
	seen := make(map[string]bool, len(ans.Tenants))
	for i, t := range ans.Tenants {
		if t.Name == "" || seen[t.Name] {
			return RegionTenants{}, false, fmt.Errorf("remote: tenants answer: tenants[%d] %q: empty or listed twice", i, t.Name)
		}
		seen[t.Name] = true
	}
	return ans, true, nil
}
