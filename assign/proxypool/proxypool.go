package proxypool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/afloat/afloat/assign"
	"github.com/afloat/afloat/internal/redact"
)

// ProbeConfig says how a proxy's health is checked: a GET of URL through
// the proxy must answer 2xx within Timeout.
//
// Fall and Rise damp flapping in a Pool that checks again and again
// (Run): a serving proxy leaves after Fall failed probes in a row, and one
// that has failed comes back after Rise healthy probes in a row. A
// candidate that has never failed joins on its first healthy probe. The
// streaks are this process's own; each worker that runs checks keeps its
// own, and the pool's membership, in Redis, is what they agree on.
type ProbeConfig struct {
	URL         string        // http:// or https:// URL fetched through each proxy (required)
	Timeout     time.Duration // per probe, dial to last header: 10 ms to 1 min (default 5 s)
	Concurrency int           // probes at once: 1 to 1000 (default 16)
	Fall        int           // failed probes in a row that take a serving proxy out: 1 to 100; 0 means 1
	Rise        int           // healthy probes in a row that bring a failed proxy back: 1 to 100; 0 means 1
}

// DefaultProbeConfig returns a 5-second timeout, 16 probes at once, and
// Fall and Rise of 2: one lost probe does not take a proxy out, and one
// lucky probe does not bring a failing one back. The URL is the caller's.
func DefaultProbeConfig(probeURL string) ProbeConfig {
	return ProbeConfig{URL: probeURL, Timeout: 5 * time.Second, Concurrency: 16, Fall: 2, Rise: 2}
}

// streaks returns Fall and Rise with 0 read as 1.
func (c ProbeConfig) streaks() (fall, rise int) { return max(1, c.Fall), max(1, c.Rise) }

// Validate checks the probe configuration, naming the field at fault.
func (c ProbeConfig) Validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: probe URL %q: want an absolute http:// or https:// URL", assign.ErrInvalid, clip(redact.URL(c.URL)))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%w: probe URL %q: port %s: want 1 to 65535", assign.ErrInvalid, clip(redact.URL(c.URL)), clip(p))
		}
	}
	if c.Timeout < 10*time.Millisecond || c.Timeout > time.Minute {
		return fmt.Errorf("%w: probe timeout %v: want 10ms to 1m0s", assign.ErrInvalid, c.Timeout)
	}
	if c.Concurrency < 1 || c.Concurrency > 1000 {
		return fmt.Errorf("%w: probe concurrency %d: want 1 to 1000", assign.ErrInvalid, c.Concurrency)
	}
	if c.Fall < 0 || c.Fall > 100 {
		return fmt.Errorf("%w: probe fall %d: want 1 to 100 (0 means 1)", assign.ErrInvalid, c.Fall)
	}
	if c.Rise < 0 || c.Rise > 100 {
		return fmt.Errorf("%w: probe rise %d: want 1 to 100 (0 means 1)", assign.ErrInvalid, c.Rise)
	}
	return nil
}

// Health is the outcome of one probe.
type Health struct {
	Proxy   string        `json:"proxy"` // the member name: the URL without its password
	Healthy bool          `json:"healthy"`
	Status  int           `json:"status,omitempty"` // the probe's HTTP status, when one came
	Took    time.Duration `json:"took_ns"`
	Err     string        `json:"error,omitempty"`
}

// Probe probes every proxy (at most c.Concurrency at once) and returns
// their health in the order given, with no pool: what a Check does before
// it changes the pool.
func Probe(ctx context.Context, proxies []*url.URL, c ProbeConfig) ([]Health, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	out := make([]Health, len(proxies))
	sem := make(chan struct{}, c.Concurrency)
	var wg sync.WaitGroup
	for i, u := range proxies {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = probe(ctx, u, c)
		})
	}
	wg.Wait()
	return out, nil
}

func probe(ctx context.Context, proxy *url.URL, c ProbeConfig) Health {
	h := Health{Proxy: memberName(proxy)}
	start := time.Now()
	tr := &http.Transport{
		Proxy:                 http.ProxyURL(proxy),
		DialContext:           (&net.Dialer{Timeout: c.Timeout}).DialContext,
		TLSHandshakeTimeout:   c.Timeout,
		ResponseHeaderTimeout: c.Timeout,
		DisableKeepAlives:     true, // a probe says nothing about a pooled connection
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL, nil)
	if err != nil {
		h.Err = err.Error()
		return h
	}
	resp, err := tr.RoundTrip(req)
	h.Took = time.Since(start)
	if err != nil {
		h.Err = err.Error()
		return h
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	h.Status = resp.StatusCode
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		h.Err = "probe answered " + resp.Status
		return h
	}
	h.Healthy = true
	return h
}

// Pool is a least-used pool of outbound HTTP proxies: candidates are
// imported from a list, probed before they become eligible and on every
// Check while they serve; unhealthy ones leave the pool and come back by
// the restore policy. Transport gives an http.Client the least-used
// healthy proxy for each request. It is safe for concurrent use; several
// processes may run one on the same pool, and they agree on eligibility
// because it lives in Redis.
type Pool struct {
	pool    *assign.Pool
	probe   ProbeConfig
	restore assign.RestorePolicy

	mu     sync.Mutex
	cands  map[string]*url.URL // member name → URL with credentials
	order  []string
	health map[string]Health  // last probe of each candidate
	streak map[string]*streak // of each candidate
}

// streak counts a candidate's last probes that agreed: failed or healthy
// in a row.
type streak struct{ failed, healthy int }

// New runs a proxy pool on pool, probing by probe and restoring recovered
// proxies by policy.
func New(pool *assign.Pool, probe ProbeConfig, policy assign.RestorePolicy) (*Pool, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: nil pool", assign.ErrInvalid)
	}
	if err := probe.Validate(); err != nil {
		return nil, err
	}
	if _, err := policy.MarshalText(); err != nil {
		return nil, err
	}
	return &Pool{pool: pool, probe: probe, restore: policy, cands: map[string]*url.URL{}, health: map[string]Health{}, streak: map[string]*streak{}}, nil
}

// Import adds candidates. They are not eligible until a Check finds them
// healthy.
func (pp *Pool) Import(proxies ...*url.URL) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	for _, u := range proxies {
		name := memberName(u)
		if _, ok := pp.cands[name]; !ok {
			pp.order = append(pp.order, name)
			// A clean record: its first healthy probe makes it eligible.
			_, rise := pp.probe.streaks()
			pp.streak[name] = &streak{healthy: rise - 1}
		}
		pp.cands[name] = u
	}
}

// Report is what one Check did.
type Report struct {
	Health   []Health // every candidate's probe
	Joined   []string // healthy candidates that became eligible
	Restored []string // recovered members brought back by the policy
	Left     []string // unhealthy members removed
}

// Check probes every candidate and brings the pool in line: healthy ones
// join (new ones at the current minimum, recovered ones by the restore
// policy), unhealthy active ones leave with their counts kept — each once
// its streak of probes reaches Rise or Fall (ProbeConfig).
func (pp *Pool) Check(ctx context.Context) (Report, error) {
	pp.mu.Lock()
	urls := make([]*url.URL, len(pp.order))
	for i, name := range pp.order {
		urls[i] = pp.cands[name]
	}
	pp.mu.Unlock()

	health, err := Probe(ctx, urls, pp.probe)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Health: health}
	fall, rise := pp.probe.streaks()
	settled := make(map[string]bool, len(health)) // the streak reached Fall or Rise
	pp.mu.Lock()
	for _, h := range health {
		pp.health[h.Proxy] = h
		st := pp.streak[h.Proxy]
		if h.Healthy {
			st.healthy, st.failed = min(st.healthy+1, rise), 0
			settled[h.Proxy] = st.healthy >= rise
		} else {
			st.failed, st.healthy = min(st.failed+1, fall), 0
			settled[h.Proxy] = st.failed >= fall
		}
	}
	pp.mu.Unlock()

	active, removed := map[string]bool{}, map[string]bool{}
	st, err := pp.pool.Status(ctx)
	if err != nil && !errors.Is(err, assign.ErrUnknownPool) {
		return rep, err
	}
	for _, m := range st.Members {
		if m.Active {
			active[m.Name] = true
		} else {
			removed[m.Name] = true
		}
	}
	var join, restore, leave []string
	for _, h := range health {
		switch {
		case !settled[h.Proxy]:
		case h.Healthy && removed[h.Proxy]:
			restore = append(restore, h.Proxy)
		case h.Healthy && !active[h.Proxy]:
			join = append(join, h.Proxy)
		case !h.Healthy && active[h.Proxy]:
			leave = append(leave, h.Proxy)
		}
	}
	// Another worker may change the pool between List and these calls; the
	// calls are all or nothing, so on a conflict go one member at a time
	// and let the other worker's change stand.
	if len(join) > 0 {
		if _, err := pp.pool.Add(ctx, assign.AtMinimum, join...); err != nil {
			return rep, err
		}
		rep.Joined = join
	}
	rep.Restored, err = pp.each(ctx, restore, func(m ...string) error { return pp.pool.Restore(ctx, pp.restore, m...) })
	if err != nil {
		return rep, err
	}
	rep.Left, err = pp.each(ctx, leave, func(m ...string) error { return pp.pool.Remove(ctx, m...) })
	return rep, err
}

func (pp *Pool) each(ctx context.Context, members []string, op func(...string) error) ([]string, error) {
	if len(members) == 0 {
		return nil, nil
	}
	err := op(members...)
	if err == nil {
		return members, nil
	}
	if !errors.Is(err, assign.ErrUnknownMember) {
		return nil, err
	}
	var done []string
	for _, m := range members {
		switch err := op(m); {
		case err == nil:
			done = append(done, m)
		case errors.Is(err, assign.ErrUnknownMember):
		default:
			return done, err
		}
	}
	return done, nil
}

// Run checks at once, then every interval until ctx ends. It returns the
// first error that is not a probe's (a probe's failure is a health
// verdict, not an error).
func (pp *Pool) Run(ctx context.Context, interval time.Duration) error {
	if interval < 10*time.Millisecond || interval > 24*time.Hour {
		return fmt.Errorf("%w: check interval %v: want 10ms to 24h0m0s", assign.ErrInvalid, interval)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := pp.Check(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// lastHealth returns each candidate's last probe, in import order
// (Healthy false and no Took for one not probed yet).
func (pp *Pool) lastHealth() []Health {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	out := make([]Health, 0, len(pp.order))
	for _, name := range pp.order {
		h, ok := pp.health[name]
		if !ok {
			h = Health{Proxy: name, Err: "not checked yet"}
		}
		out = append(out, h)
	}
	return out
}

type pickSlot struct{ member string }
type slotKey struct{}

// proxyFunc returns a function for http.Transport.Proxy: each request gets
// the least-used healthy proxy, counted in the pool. With no eligible
// proxy the request fails with assign.ErrPoolEmpty before anything is
// dialled.
func (pp *Pool) proxyFunc() func(*http.Request) (*url.URL, error) {
	return func(req *http.Request) (*url.URL, error) {
		// http.Transport asks again when it retries a request on a fresh
		// connection (the kept-alive one was closed under it): one request
		// is one assignment, so through Transport a retry goes to the
		// proxy already picked for it.
		s, _ := req.Context().Value(slotKey{}).(*pickSlot)
		m := ""
		if s != nil {
			m = s.member
		}
		if m == "" {
			var err error
			if m, err = pp.pool.Pick(req.Context()); err != nil {
				return nil, err
			}
			if s != nil {
				s.member = m
			}
		}
		pp.mu.Lock()
		u, ok := pp.cands[m]
		pp.mu.Unlock()
		if ok {
			return u, nil
		}
		// Imported by another worker: its name is its URL.
		u, err := url.Parse(m)
		if err != nil {
			return nil, fmt.Errorf("proxypool: pool member %q is not a proxy URL: %w", clip(m), err)
		}
		return u, nil
	}
}

// Transport returns base (cloned, or a clone of http.DefaultTransport if
// nil) with Proxy set so that each request gets the least-used healthy
// proxy, counted in the pool — with no eligible proxy the request fails
// with assign.ErrPoolEmpty before anything is dialled — and wrapped so
// that a request that fails in transport (the proxy refused the
// connection, reset it, timed out) is counted as a failure of its proxy,
// apart from its assignment.
func (pp *Pool) Transport(base *http.Transport) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport.(*http.Transport)
	}
	tr := base.Clone()
	tr.Proxy = pp.proxyFunc()
	return &proxyTransport{pp: pp, base: tr}
}

type proxyTransport struct {
	pp   *Pool
	base *http.Transport
}

func (t *proxyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	slot := &pickSlot{}
	ctx := req.Context()
	resp, err := t.base.RoundTrip(req.WithContext(context.WithValue(ctx, slotKey{}, slot)))
	if err != nil && slot.member != "" && ctx.Err() == nil {
		// A failure to count is not the request's error: report the
		// request's own.
		t.pp.pool.RecordFailure(context.WithoutCancel(ctx), slot.member, 0)
	}
	return resp, err
}
