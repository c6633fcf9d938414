package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/region"
	"github.com/afloat/afloat/quota/remote"
)

// deadlines is a coordinator that notes, for each call it gets, how long
// the call had left until its context's deadline; with busy set it
// refuses every call with it.
type deadlines struct {
	*coordinator.Server
	mu   sync.Mutex
	left []time.Duration // 0: no deadline
	busy error
	each error // each request's result, when not nil
}

func (d *deadlines) note(ctx context.Context) error {
	var left time.Duration
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.left = append(d.left, left)
	return d.busy
}

func (d *deadlines) last() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.left[len(d.left)-1]
}

func (d *deadlines) RenewBatch(ctx context.Context, reqs []quota.Request) ([]quota.Result, error) {
	if err := d.note(ctx); err != nil {
		return nil, err
	}
	d.mu.Lock()
	each := d.each
	d.mu.Unlock()
	if each != nil {
		res := make([]quota.Result, len(reqs))
		for i := range res {
			res[i].Err = each
		}
		return res, nil
	}
	return d.Server.RenewBatch(ctx, reqs)
}

func (d *deadlines) ReturnBatch(ctx context.Context, rets []quota.Return) ([]error, error) {
	if err := d.note(ctx); err != nil {
		return nil, err
	}
	return d.Server.ReturnBatch(ctx, rets)
}

// bodies notes the patience_ms of every renewal and return body (-1 when
// absent) before the handler reads it.
type bodies struct {
	mu       sync.Mutex
	patience []int64
}

func (b *bodies) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/renew" || r.URL.Path == "/v1/return" {
			raw, _ := io.ReadAll(r.Body)
			var m map[string]json.RawMessage
			json.Unmarshal(raw, &m) //nolint:errcheck // the handler says what is wrong
			p := int64(-1)
			if v, ok := m["patience_ms"]; ok {
				json.Unmarshal(v, &p) //nolint:errcheck
			}
			b.mu.Lock()
			b.patience = append(b.patience, p)
			b.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(raw))
		}
		h.ServeHTTP(w, r)
	})
}

func (b *bodies) all() []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int64(nil), b.patience...)
}

// TestPatience: the client sends its caller's patience — the time to the
// context's deadline, or to the HTTP client's timeout if sooner; none
// without either — and the handler gives the coordinator a deadline of
// the body's receipt plus the lesser of that and its Timeout. A body
// whose patience_ms is out of range is refused (400) naming it; a
// context already past its deadline sends nothing.
func TestPatience(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tn := quota.Tenant{Name: "acme", Rate: 100 * quota.One, Burst: 100 * quota.One, Regions: []string{"eu", "us"}}
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: []quota.Tenant{tn}}, coordinator.NewMemLedger())
	if err != nil {
		t.Fatal(err)
	}
	go srv.Run(ctx)
	back := &deadlines{Server: srv}
	h, err := remote.Handler(remote.HandlerConfig{Tokens: tokens, Timeout: 2 * time.Second,
		Lead: func() (remote.Backend, string) { return back, "" }})
	if err != nil {
		t.Fatal(err)
	}
	seen := &bodies{}
	hs := httptest.NewServer(seen.wrap(h))
	defer hs.Close()
	c, err := remote.NewClient(remote.ClientConfig{Endpoints: []string{hs.URL}, Region: "eu", Token: tokens["eu"]})
	if err != nil {
		t.Fatal(err)
	}
	noTimeout, err := remote.NewClient(remote.ClientConfig{Endpoints: []string{hs.URL}, Region: "us", Token: tokens["us"], HTTP: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		c           *remote.Client
		region      string
		wait        time.Duration    // the ctx's deadline; 0 for none
		body        [2]int64         // patience_ms sent, from and to; -1 for none
		coordinator [2]time.Duration // what the coordinator had left, from and to
	}{
		{c, "eu", 300 * time.Millisecond, [2]int64{200, 300}, [2]time.Duration{100 * time.Millisecond, 300 * time.Millisecond}},
		{c, "eu", 10 * time.Second, [2]int64{5000, 5000}, [2]time.Duration{1500 * time.Millisecond, 2 * time.Second}}, // the HTTP client's 5 s; the handler's 2 s
		{noTimeout, "us", 0, [2]int64{-1, -1}, [2]time.Duration{1500 * time.Millisecond, 2 * time.Second}},            // none: the handler's Timeout
	} {
		cctx, ccancel := context.Background(), context.CancelFunc(func() {})
		if tc.wait > 0 {
			cctx, ccancel = context.WithTimeout(ctx, tc.wait)
		}
		_, err := tc.c.Renew(cctx, quota.Request{Tenant: "acme", Region: tc.region, Seq: uint64(10 + i), Demand: -1})
		ccancel()
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		sent := seen.all()
		if p := sent[len(sent)-1]; p < tc.body[0] || p > tc.body[1] {
			t.Errorf("step %d: patience_ms %d sent, want %d to %d (-1: none)", i, p, tc.body[0], tc.body[1])
		}
		if left := back.last(); left < tc.coordinator[0] || left > tc.coordinator[1] {
			t.Errorf("step %d: the coordinator had %v left, want %v to %v", i, left, tc.coordinator[0], tc.coordinator[1])
		}
	}

	// Out of range: refused, naming the field and the range.
	for i, p := range []string{"-1", "60001"} {
		resp, body := post(t, hs.URL+"/v1/renew", tokens["eu"], `{"incarnation":1,"requests":[],"patience_ms":`+p+`}`)
		want := fmt.Sprintf("patience_ms %s: want 1 to 60000 (milliseconds), or none", p)
		if resp.StatusCode != 400 || !strings.Contains(body, want) {
			t.Errorf("step %d: patience_ms %s: %d %s, want 400 saying %q", i, p, resp.StatusCode, body, want)
		}
		resp, body = post(t, hs.URL+"/v1/return", tokens["eu"], `{"incarnation":1,"returns":[],"patience_ms":`+p+`}`)
		if resp.StatusCode != 400 || !strings.Contains(body, want) {
			t.Errorf("step %d: a return's patience_ms %s: %d %s, want 400 saying %q", i, p, resp.StatusCode, body, want)
		}
	}

	// Past its deadline: nothing sent.
	before := len(seen.all())
	past, pcancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer pcancel()
	if _, err := c.RenewBatch(past, []quota.Request{{Tenant: "acme", Region: "eu", Seq: 20}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a ctx past its deadline: %v, want context.DeadlineExceeded", err)
	}
	if n := len(seen.all()) - before; n != 0 {
		t.Errorf("%d bodies sent for a ctx past its deadline, want none", n)
	}
}

// TestBusyAndBatches: a coordinator that sheds load refuses the whole
// body (503 busy) and the client returns a *quota.BusyError with the
// wait, for renewals and returns alike; a batch over MaxBatch goes in two
// bodies, answered in order.
func TestBusyAndBatches(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tn := quota.Tenant{Name: "acme", Rate: 100 * quota.One, Burst: 100 * quota.One, Regions: []string{"eu"}}
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: []quota.Tenant{tn}}, coordinator.NewMemLedger())
	if err != nil {
		t.Fatal(err)
	}
	go srv.Run(ctx)
	back := &deadlines{Server: srv}
	h, err := remote.Handler(remote.HandlerConfig{Tokens: tokens, Lead: func() (remote.Backend, string) { return back, "" }})
	if err != nil {
		t.Fatal(err)
	}
	seen := &bodies{}
	hs := httptest.NewServer(seen.wrap(h))
	defer hs.Close()
	c, err := remote.NewClient(remote.ClientConfig{Endpoints: []string{hs.URL}, Region: "eu", Token: tokens["eu"]})
	if err != nil {
		t.Fatal(err)
	}

	reqs := make([]quota.Request, remote.MaxBatch+2)
	for i := range reqs {
		reqs[i] = quota.Request{Tenant: fmt.Sprintf("t%d", i), Region: "eu", Seq: uint64(i + 1), Demand: -1}
	}
	reqs[0].Tenant, reqs[remote.MaxBatch].Tenant = "acme", "acme"
	res, err := c.RenewBatch(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(seen.all()); n != 2 {
		t.Errorf("%d bodies for %d requests, want 2", n, len(reqs))
	}
	for i, r := range res {
		if granted := r.Err == nil; granted != (reqs[i].Tenant == "acme") {
			t.Fatalf("result %d for %s: %+v", i, reqs[i].Tenant, r)
		}
		if r.Err != nil && (!errors.Is(r.Err, quota.ErrUnknownTenant) || !strings.Contains(r.Err.Error(), reqs[i].Tenant)) {
			t.Fatalf("result %d for %s: %v, want its unknown tenant", i, reqs[i].Tenant, r.Err)
		}
	}

	back.mu.Lock()
	back.busy = &quota.BusyError{Wait: 1500 * time.Millisecond, Why: "admission bulkhead full"}
	back.mu.Unlock()
	var busy *quota.BusyError
	if _, err := c.RenewBatch(ctx, reqs[:1]); !errors.As(err, &busy) || busy.Wait != 1500*time.Millisecond {
		t.Errorf("renewals refused busy: %v, want a *quota.BusyError asking 1.5 s", err)
	}
	if _, err := c.ReturnBatch(ctx, []quota.Return{{Tenant: "acme", Region: "eu", LeaseID: res[0].Grant.Lease.ID}}); !errors.As(err, &busy) || busy.Wait != 1500*time.Millisecond {
		t.Errorf("returns refused busy: %v, want a *quota.BusyError asking 1.5 s", err)
	}

	// Refused for the writes queued ahead: the coordinator needs 3 s
	// before a call's deadline, which it sets at three quarters of the
	// caller's patience: a call needs 4 s of patience.
	back.mu.Lock()
	back.busy = &quota.BusyError{Wait: 200 * time.Millisecond, Why: "the writes queued ahead", Need: 3 * time.Second}
	back.mu.Unlock()
	if _, err := c.RenewBatch(ctx, reqs[:1]); !errors.As(err, &busy) || busy.Need != 4*time.Second {
		t.Errorf("renewals refused busy for the writes ahead: %v, want a *quota.BusyError needing 4 s", err)
	}
	// One request refused so, in a call answered: its result is busy,
	// and says the patience a call needs, as a call refused whole does.
	back.mu.Lock()
	back.busy, back.each = nil, &quota.BusyError{Why: "the writes queued ahead", Need: 3 * time.Second}
	back.mu.Unlock()
	res, err = c.RenewBatch(ctx, reqs[:1])
	if err != nil || len(res) != 1 || !errors.As(res[0].Err, &busy) || busy.Need != 4*time.Second {
		t.Errorf("a request refused busy alone: %+v, %v: want its result busy, needing 4 s", res, err)
	}
}

// TestRegionBatchIsABody: a region's calls (region.DefaultBatchSize)
// fill a body (MaxBatch): region cannot import this package, which
// imports net/http, so the two constants are held together here.
func TestRegionBatchIsABody(t *testing.T) {
	if region.DefaultBatchSize != remote.MaxBatch {
		t.Fatalf("region.DefaultBatchSize %d, remote.MaxBatch %d: want the same", region.DefaultBatchSize, remote.MaxBatch)
	}
}

// TestTimedOutLeaderIsAskedAfterTheOthers: a call whose context ends
// before the leader answers fails with the context's error, at once; the
// next call starts at the next coordinator. A leader that was paused
// while that one took over is so left behind at the next call (the
// region renews again after one patience, not after the pause); one
// that was only slow is named by the follower, and asked again in the
// same call.
func TestTimedOutLeaderIsAskedAfterTheOthers(t *testing.T) {
	for _, otherLeads := range []bool{true, false} {
		var renewals, others atomic.Int64
		release := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/region/attach" {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"epoch":1,"incarnation":5}`) //nolint:errcheck
				return
			}
			renewals.Add(1)
			io.Copy(io.Discard, r.Body) //nolint:errcheck // read: the server then sees the caller go
			select {                    // answers nothing before the caller gives up
			case <-r.Context().Done():
			case <-release:
			}
		}))
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			others.Add(1)
			w.Header().Set("Content-Type", "application/json")
			if !otherLeads {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, `{"error":"remote: this coordinator is not the leader","leader":%q}`, slow.URL)
				return
			}
			io.WriteString(w, `{"epoch":2,"results":[{"grant":{"lease":{"id":7,"tenant":"acme","region":"eu","epoch":2},"seq":2}}]}`) //nolint:errcheck
		}))
		c, err := remote.NewClient(remote.ClientConfig{Endpoints: []string{slow.URL, other.URL}, Region: "eu", Token: tokens["eu"]})
		if err != nil {
			t.Fatal(err)
		}
		call := func(seq uint64) ([]quota.Result, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			return c.RenewBatch(ctx, []quota.Request{{Tenant: "acme", Region: "eu", Seq: seq}})
		}
		if _, err := call(1); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("other leads %v: the first call: %v, want context.DeadlineExceeded", otherLeads, err)
		}
		res, err := call(2)
		switch {
		case otherLeads && (err != nil || res[0].Grant.Lease.ID != 7):
			t.Errorf("the other coordinator leads: the second call got %+v, %v; want its grant", res, err)
		case otherLeads && (renewals.Load() != 1 || others.Load() != 1):
			t.Errorf("the other coordinator leads: %d renewals at the silent one, %d at the other; want 1 and 1", renewals.Load(), others.Load())
		case !otherLeads && !errors.Is(err, context.DeadlineExceeded):
			t.Errorf("the slow one leads: the second call: %v, want context.DeadlineExceeded", err)
		case !otherLeads && (renewals.Load() != 2 || others.Load() != 1):
			t.Errorf("the slow one leads: %d renewals at it, %d at the follower; want 2 and 1: the follower names it", renewals.Load(), others.Load())
		}
		close(release)
		slow.Close()
		other.Close()
	}
}
