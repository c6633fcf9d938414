package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
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
	// Region and Token: this region and its bearer token.
	Region, Token string
	// HTTP is the HTTP client; default one with a 5 s timeout.
	HTTP *http.Client
	// Linger is how long a call waits for others to share its HTTP
	// request; default 2 ms.
	Linger time.Duration
	// OnNudge receives the nudges that ride on answers; may be nil.
	OnNudge func(quota.Nudge)
}

// Client is a region's side of the API: it implements region.Coordinator.
// Calls made within Linger of each other travel in one HTTP request (up
// to MaxBatch), so that a region renewing thousands of tenants sends tens
// of requests, not thousands. It is safe for concurrent use.
type Client struct {
	cfg    ClientConfig
	leader atomic.Int64 // index into Endpoints of the one believed to lead

	mu      sync.Mutex
	renews  []*call
	returns []*call
	timer   *time.Timer
}

type call struct {
	req  quota.Request
	ret  quota.Return
	done chan callResult
}

type callResult struct {
	grant quota.Grant
	err   error
}

// NewClient checks the configuration and returns a client.
func NewClient(cfg ClientConfig) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: remote: no coordinator endpoints", quota.ErrConfig)
	}
	for i, e := range cfg.Endpoints {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%w: remote: endpoints[%d] %q: want http://host:port or https://host:port", quota.ErrConfig, i, e)
		}
		cfg.Endpoints[i] = strings.TrimSuffix(e, "/")
	}
	if cfg.Region == "" || cfg.Token == "" {
		return nil, fmt.Errorf("%w: remote: a region and its token are required", quota.ErrConfig)
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 5 * time.Second}
	}
	if cfg.Linger == 0 {
		cfg.Linger = 2 * time.Millisecond
	}
	return &Client{cfg: cfg}, nil
}

// Renew implements region.Coordinator.
func (c *Client) Renew(ctx context.Context, req quota.Request) (quota.Grant, error) {
	cl := &call{req: req, done: make(chan callResult, 1)}
	c.enqueue(&c.renews, cl)
	select {
	case r := <-cl.done:
		return r.grant, r.err
	case <-ctx.Done():
		return quota.Grant{}, fmt.Errorf("remote: renewing: %w", ctx.Err())
	}
}

// Return implements region.Coordinator.
func (c *Client) Return(ctx context.Context, ret quota.Return) error {
	cl := &call{ret: ret, done: make(chan callResult, 1)}
	c.enqueue(&c.returns, cl)
	select {
	case r := <-cl.done:
		return r.err
	case <-ctx.Done():
		return fmt.Errorf("remote: returning: %w", ctx.Err())
	}
}

// Poll sends an empty renewal: it picks up the region's nudges, and says
// whether a leader answers.
func (c *Client) Poll(ctx context.Context) error {
	_, err := c.send(ctx, "/v1/renew", RenewBody{Requests: []quota.Request{}}, 0)
	return err
}

func (c *Client) enqueue(q *[]*call, cl *call) {
	c.mu.Lock()
	*q = append(*q, cl)
	full := len(*q) >= MaxBatch
	if c.timer == nil && !full {
		c.timer = time.AfterFunc(c.cfg.Linger, c.flush)
	}
	c.mu.Unlock()
	if full {
		c.flush()
	}
}

// flush sends what is queued, each kind in its own HTTP request(s).
func (c *Client) flush() {
	c.mu.Lock()
	renews, returns := c.renews, c.returns
	c.renews, c.returns = nil, nil
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.mu.Unlock()
	for len(renews) > 0 {
		n := min(len(renews), MaxBatch)
		go c.sendRenews(renews[:n])
		renews = renews[n:]
	}
	for len(returns) > 0 {
		n := min(len(returns), MaxBatch)
		go c.sendReturns(returns[:n])
		returns = returns[n:]
	}
}

func (c *Client) sendRenews(calls []*call) {
	body := RenewBody{Requests: make([]quota.Request, len(calls))}
	for i, cl := range calls {
		body.Requests[i] = cl.req
	}
	ans, err := c.send(context.Background(), "/v1/renew", body, len(calls))
	for i, cl := range calls {
		if err != nil {
			cl.done <- callResult{err: err}
			continue
		}
		r := ans.Results[i]
		if e := errOf(r); e != nil {
			cl.done <- callResult{err: e}
		} else if r.Grant == nil {
			cl.done <- callResult{err: fmt.Errorf("remote: result %d has neither a grant nor an error", i)}
		} else {
			cl.done <- callResult{grant: *r.Grant}
		}
	}
}

func (c *Client) sendReturns(calls []*call) {
	body := ReturnBody{Returns: make([]quota.Return, len(calls))}
	for i, cl := range calls {
		body.Returns[i] = cl.ret
	}
	ans, err := c.send(context.Background(), "/v1/return", body, len(calls))
	for i, cl := range calls {
		if err != nil {
			cl.done <- callResult{err: err}
			continue
		}
		cl.done <- callResult{err: errOf(ans.Results[i])}
	}
}

// send posts body to the leader (see leaderDo) and checks the answer.
func (c *Client) send(ctx context.Context, path string, body any, want int) (Answer, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return Answer{}, err
	}
	var ans Answer
	err = c.leaderDo(ctx, http.MethodPost, path, data, func(raw []byte) error {
		if err := json.Unmarshal(raw, &ans); err != nil {
			return fmt.Errorf("remote: answer: %w", err)
		}
		return nil
	})
	if err != nil {
		return Answer{}, err
	}
	if len(ans.Results) != want {
		return Answer{}, fmt.Errorf("remote: %d results for %d calls", len(ans.Results), want)
	}
	if c.cfg.OnNudge != nil {
		for _, nd := range ans.Nudges {
			c.cfg.OnNudge(nd)
		}
	}
	return ans, nil
}

// Tenants asks the leader for the tenants whose traffic enters this
// region (GET /v1/region/tenants): an agent polls it to serve tenants
// created through the coordinator's API and to drop deleted ones. An
// answer for another region, or with a tenant twice or unnamed, is an
// error: the agent keeps the set it has.
func (c *Client) Tenants(ctx context.Context) (RegionTenants, error) {
	var ans RegionTenants
	err := c.leaderDo(ctx, http.MethodGet, "/v1/region/tenants", nil, func(raw []byte) error {
		if err := json.Unmarshal(raw, &ans); err != nil {
			return fmt.Errorf("remote: tenants answer: %w", err)
		}
		return nil
	})
	if err != nil {
		return RegionTenants{}, err
	}
	if ans.Region != c.cfg.Region {
		return RegionTenants{}, fmt.Errorf("remote: tenants answer for region %q, want %q", ans.Region, c.cfg.Region)
	}
	seen := make(map[string]bool, len(ans.Tenants))
	for i, t := range ans.Tenants {
		if t.Name == "" || seen[t.Name] {
			return RegionTenants{}, fmt.Errorf("remote: tenants answer: tenants[%d] %q: empty or listed twice", i, t.Name)
		}
		seen[t.Name] = true
	}
	return ans, nil
}

// leaderDo sends a request to the leader, following a follower's answer
// to the leader it names (only among the configured endpoints: the token
// goes nowhere else) and trying each endpoint once when one does not
// answer; decode reads a 200 answer.
func (c *Client) leaderDo(ctx context.Context, method, path string, data []byte, decode func([]byte) error) error {
	n := len(c.cfg.Endpoints)
	var last error
	for try := 0; try < n+1; try++ {
		i := int(c.leader.Load()) % n
		raw, leader, err := c.do(ctx, method, c.cfg.Endpoints[i]+path, data)
		if err == nil {
			return decode(raw)
		}
		last = err
		if errors.Is(err, ErrUnauthorized) {
			return err
		}
		next := (i + 1) % n
		if leader != "" {
			for j, e := range c.cfg.Endpoints {
				if e == strings.TrimSuffix(leader, "/") {
					next = j
				}
			}
		}
		c.leader.CompareAndSwap(int64(i), int64(next))
	}
	return fmt.Errorf("%w: %v", ErrNoLeader, last)
}

// do makes one HTTP request; it returns a 200 answer's body, or the
// error and the leader a follower named.
func (c *Client) do(ctx context.Context, method, u string, data []byte) ([]byte, string, error) {
	var body io.Reader
	if data != nil {
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, "", err
	}
	if data != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("remote: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4*MaxBody))
	if err != nil {
		return nil, "", fmt.Errorf("remote: reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var ref Refusal
		json.Unmarshal(raw, &ref) //nolint:errcheck // the status says enough
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return nil, "", fmt.Errorf("%w: %s: %s", ErrUnauthorized, resp.Status, ref.Error)
		}
		return nil, ref.Leader, fmt.Errorf("remote: %s: %s: %s", u, resp.Status, ref.Error)
	}
	return raw, "", nil
}
