package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/remote"
)

func client(t *testing.T, url, region, agent string) *remote.Client {
	t.Helper()
	c, err := remote.NewClient(remote.ClientConfig{Endpoints: []string{url}, Region: region, Token: tokens[region], Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAttachAndDetach: the first agent of a region attaches; a second is
// refused with 409, the holder and a Retry-After, over the client as a
// *quota.HeldError; the holder detaches and its leases stop counting at
// once; an agent whose incarnation was superseded attaches again.
func TestAttachAndDetach(t *testing.T) {
	hs, srv, _ := served(t)
	ctx := context.Background()
	a := client(t, hs.URL, "eu", "host-a:1")
	g, err := a.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: 1, Demand: -1})
	if err != nil {
		t.Fatal(err)
	}
	if a.Incarnation() == 0 {
		t.Fatal("the client renewed without attaching")
	}

	b := client(t, hs.URL, "eu", "host-b:2")
	_, err = b.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: 1, Demand: -1})
	var held *quota.HeldError
	if !errors.As(err, &held) || !strings.HasPrefix(held.Holder, "host-a:1, attached ") || held.Wait < time.Second {
		t.Fatalf("a second agent's renewal: %v, want a HeldError naming host-a:1", err)
	}
	t.Log(err)
	resp, body := post(t, hs.URL+"/v1/region/attach", tokens["eu"], `{"agent":"host-c:3"}`)
	var ref remote.Refusal
	json.Unmarshal([]byte(body), &ref) //nolint:errcheck
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 409 || ref.Code != remote.CodeRegionHeld || !strings.HasPrefix(ref.Holder, "host-a:1") || ra < 10 || ra > 11 {
		t.Fatalf("attach while held: %d Retry-After %q %s; want 409, region_held, the holder, the lease's 10.5 s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if n := len(srv.Live("acme")); n != 1 {
		t.Fatalf("%d live leases, want a's one", n)
	}
	// us is another region: its own agent attaches.
	if _, err := client(t, hs.URL, "us", "host-u:1").Renew(ctx, quota.Request{Tenant: "acme", Region: "us", Seq: 1, Demand: -1}); err != nil {
		t.Fatalf("us beside eu: %v", err)
	}

	// a gives its lease back and detaches: eu is free at once.
	if err := a.Return(ctx, quota.Return{Tenant: "acme", Region: "eu", LeaseID: g.Lease.ID, Epoch: g.Lease.Epoch}); err != nil {
		t.Fatal(err)
	}
	if err := a.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Detach(ctx); err != nil {
		t.Fatalf("a second detach: %v, want nil", err)
	}
	if _, err := a.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: 2, Demand: -1}); err == nil {
		t.Fatal("a detached client renewed")
	}
	c := client(t, hs.URL, "eu", "host-c:3")
	if _, err := c.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: 1, Demand: -1}); err != nil {
		t.Fatalf("an agent after the holder detached: %v", err)
	}

	// c is superseded (its incarnation detached behind its back): its
	// next call fails, the one after attaches again.
	inc := c.Incarnation()
	if resp, body := post(t, hs.URL+"/v1/region/detach", tokens["eu"], fmt.Sprintf(`{"incarnation":%d}`, inc)); resp.StatusCode != 200 {
		t.Fatalf("detach: %d %s", resp.StatusCode, body)
	}
	if resp, body := post(t, hs.URL+"/v1/region/detach", tokens["eu"], fmt.Sprintf(`{"incarnation":%d}`, inc)); resp.StatusCode != 409 || !strings.Contains(body, `"code":"superseded"`) {
		t.Fatalf("detach of a detached incarnation: %d %s", resp.StatusCode, body)
	}
	if _, err := c.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: 2, Demand: -1}); !errors.Is(err, quota.ErrSuperseded) {
		t.Fatalf("renewal of a superseded incarnation: %v", err)
	}
	if _, err := c.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: 3, Demand: -1}); err != nil || c.Incarnation() == inc || c.Incarnation() == 0 {
		t.Fatalf("after being superseded: %v, incarnation %d (was %d); want a new one", err, c.Incarnation(), inc)
	}

	// An agent with nothing to renew learns from its polls that it stands
	// by, or was superseded.
	if err := client(t, hs.URL, "eu", "host-p:4").Poll(ctx); !errors.Is(err, quota.ErrRegionHeld) {
		t.Fatalf("a poll while c holds eu: %v, want ErrRegionHeld", err)
	}
	if err := c.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	p := client(t, hs.URL, "eu", "host-p:5")
	if err := p.Poll(ctx); err != nil || p.Incarnation() == 0 {
		t.Fatalf("a poll once eu was free: %v", err)
	}
	pinc := p.Incarnation()
	if resp, body := post(t, hs.URL+"/v1/region/detach", tokens["eu"], fmt.Sprintf(`{"incarnation":%d}`, pinc)); resp.StatusCode != 200 {
		t.Fatalf("detach: %d %s", resp.StatusCode, body)
	}
	if err := p.Poll(ctx); !errors.Is(err, quota.ErrSuperseded) || p.Incarnation() != 0 {
		t.Fatalf("a poll of a superseded incarnation: %v (incarnation %d)", err, p.Incarnation())
	}
	if err := p.Poll(ctx); err != nil || p.Incarnation() == 0 || p.Incarnation() == pinc {
		t.Fatalf("the next poll: %v, incarnation %d; want a new one", err, p.Incarnation())
	}
}

// TestIncarnationRequired: over the network every call needs the
// incarnation an attach returned — incarnation 0 is refused whole, also
// for a region no agent ever attached (no network caller passes as an
// in-process one) — and a made-up one is superseded. Bad attach bodies are
// refused naming the field.
func TestIncarnationRequired(t *testing.T) {
	hs, srv, _ := served(t)
	for i, tc := range []struct {
		path, token, body string
		want              int
		says              string
	}{
		{"/v1/renew", tokens["us"], `{"requests":[{"tenant":"acme","region":"us","seq":1}]}`, 400, "incarnation 0"},
		{"/v1/renew", tokens["eu"], `{"incarnation":0,"requests":[{"tenant":"acme","region":"eu","seq":1}]}`, 400, "incarnation 0"},
		{"/v1/renew", tokens["eu"], `{"incarnation":5,"requests":[{"tenant":"acme","region":"eu","seq":1,"incarnation":6}]}`, 400, "requests[0].incarnation"},
		{"/v1/return", tokens["eu"], `{"returns":[{"tenant":"acme","region":"eu","lease_id":1}]}`, 400, "incarnation 0"},
		{"/v1/region/detach", tokens["eu"], `{"incarnation":0}`, 400, "incarnation 0"},
		{"/v1/region/attach", tokens["eu"], `{"agent":""}`, 400, `agent \"\"`},
		{"/v1/region/attach", tokens["eu"], `{"agent":"a\u0007b"}`, 400, "printable"},
		{"/v1/region/attach", tokens["eu"], `{"agent":"` + strings.Repeat("a", 257) + `"}`, 400, "want 1 to 256"},
		{"/v1/region/attach", tokens["eu"], `{"agent":"a","region":"us"}`, 400, "unknown field"},
		{"/v1/region/attach", "", `{"agent":"a"}`, 401, "token"},
		{"/v1/renew", tokens["eu"], `{"requests":[]}`, 200, `"results":[]`}, // a probe
	} {
		resp, body := post(t, hs.URL+tc.path, tc.token, tc.body)
		if resp.StatusCode != tc.want || !strings.Contains(body, tc.says) {
			t.Errorf("step %d: %s %s: %d %s, want %d naming %q", i, tc.path, tc.body, resp.StatusCode, body, tc.want, tc.says)
		}
	}
	resp, body := post(t, hs.URL+"/v1/renew", tokens["eu"], `{"incarnation":12345,"requests":[{"tenant":"acme","region":"eu","seq":1}]}`)
	if resp.StatusCode != 200 || !strings.Contains(body, `"code":"superseded"`) {
		t.Fatalf("a made-up incarnation: %d %s", resp.StatusCode, body)
	}
	if n := len(srv.Live("acme")); n != 0 {
		t.Fatalf("%d leases granted to calls without a valid incarnation", n)
	}
}

// TestForgedEpochUnderLoad: region eu's token sends renewals and returns
// claiming epoch 2⁶⁴−1 — in the old form (no incarnation), with a made-up
// incarnation, and as eu's attached agent — while us renews without a
// pause: every forged call is refused, the coordinator keeps its epoch and
// leads on, and not one of us's renewals fails. (The coordinator used to
// step down on such a claim and fail every region's renewals.)
func TestForgedEpochUnderLoad(t *testing.T) {
	hs, srv, _ := served(t)
	ctx := context.Background()
	epoch := srv.Epoch()
	eu := client(t, hs.URL, "eu", "host-eu:1")
	if _, err := eu.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: 1, Demand: -1}); err != nil {
		t.Fatal(err)
	}
	forged := []string{
		`{"requests":[{"tenant":"acme","region":"eu","seq":900,"epoch":18446744073709551615}]}`,
		`{"incarnation":4711,"requests":[{"tenant":"acme","region":"eu","seq":901,"epoch":18446744073709551615}]}`,
		fmt.Sprintf(`{"incarnation":%d,"requests":[{"tenant":"acme","region":"eu","seq":902,"epoch":18446744073709551615}]}`, eu.Incarnation()),
	}
	forgedReturn := fmt.Sprintf(`{"incarnation":%d,"returns":[{"tenant":"acme","region":"eu","lease_id":1,"epoch":18446744073709551615}]}`, eu.Incarnation())

	us := client(t, hs.URL, "us", "host-us:1")
	var wg sync.WaitGroup
	var failures []error
	var mu sync.Mutex
	const renewals = 200
	wg.Go(func() {
		var holding uint64
		for i := range renewals {
			g, err := us.Renew(ctx, quota.Request{Tenant: "acme", Region: "us", Seq: uint64(i + 1), Holding: holding, Epoch: epoch, Demand: 50 * quota.One})
			if err != nil {
				mu.Lock()
				failures = append(failures, err)
				mu.Unlock()
				continue
			}
			holding = g.Lease.ID
		}
	})
	for i := range 30 {
		path, body := "/v1/renew", forged[i%len(forged)]
		if i%4 == 3 {
			path, body = "/v1/return", forgedReturn
		}
		resp, got := post(t, hs.URL+path, tokens["eu"], body)
		if resp.StatusCode == 200 && !strings.Contains(got, `"code":"unverified_epoch"`) && !strings.Contains(got, `"code":"superseded"`) {
			t.Errorf("step %d: forged epoch: %d %s, want it refused", i, resp.StatusCode, got)
		}
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of us's %d renewals failed while eu's token forged epochs, e.g. %v", len(failures), renewals, failures[0])
	}
	if srv.Epoch() != epoch {
		t.Fatalf("epoch %d after the forged calls, was %d", srv.Epoch(), epoch)
	}
	if _, err := eu.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: 2, Epoch: epoch, Demand: -1}); err != nil {
		t.Fatalf("eu's own agent after the forgery: %v", err)
	}
}

// TestClientLeavesACoordinatorBehind: a region that has heard from a newer
// leader (epoch 2) and asks a coordinator still at epoch 1 is refused
// (unverified_epoch), and its client turns to the next configured
// coordinator, where it attaches and is granted.
func TestClientLeavesACoordinatorBehind(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tn := quota.Tenant{Name: "acme", Rate: 100 * quota.One, Burst: 100 * quota.One, Regions: []string{"eu", "us"}}
	serve := func(fences int) string {
		l := coordinator.NewMemLedger()
		for range fences - 1 {
			l.Fence(ctx) //nolint:errcheck // a ledger at a higher epoch
		}
		srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: []quota.Tenant{tn}}, l)
		if err != nil {
			t.Fatal(err)
		}
		go srv.Run(ctx)
		h, _ := remote.Handler(remote.HandlerConfig{Tokens: tokens, Lead: func() (remote.Backend, string) { return srv, "" }})
		hs := httptest.NewServer(h)
		t.Cleanup(hs.Close)
		return hs.URL
	}
	behind, ahead := serve(1), serve(2)
	c, err := remote.NewClient(remote.ClientConfig{Endpoints: []string{behind, ahead}, Region: "eu", Token: tokens["eu"]})
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	for i := range 4 {
		g, err := c.Renew(ctx, quota.Request{Tenant: "acme", Region: "eu", Seq: uint64(i + 1), Epoch: 2, Demand: -1})
		if err == nil {
			if g.Lease.Epoch != 2 {
				t.Fatalf("granted at epoch %d, want 2", g.Lease.Epoch)
			}
			t.Logf("granted by the newer coordinator after %v", errs)
			if !errors.Is(errs[0], quota.ErrUnverifiedEpoch) {
				t.Fatalf("first refusal %v, want ErrUnverifiedEpoch", errs[0])
			}
			return
		}
		errs = append(errs, err)
	}
	t.Fatalf("never reached the newer coordinator: %v", errs)
}

// FuzzRegionAttach: whatever bodies the attach, detach, renew and return
// routes get from one region's token, in any order, each answer's status
// is one the API lists (a refused attach with its Retry-After), nothing
// is granted to another region, and no claimed epoch moves the
// coordinator's. (That two incarnations never spend at once is
// TestOneIncarnationSpends' property, in quota/coordinator.)
func FuzzRegionAttach(f *testing.F) {
	f.Add(uint8(0), []byte(`{"agent":"host:1"}`))
	f.Add(uint8(1), []byte(`{"incarnation":1}`))
	f.Add(uint8(2), []byte(`{"incarnation":1,"requests":[{"tenant":"acme","region":"eu","seq":1}]}`))
	f.Add(uint8(3), []byte(`{"incarnation":1,"returns":[{"tenant":"acme","region":"eu","lease_id":1}]}`))
	f.Add(uint8(0), []byte(`{"agent":"\u0000"}`))
	f.Add(uint8(1), []byte(`{"incarnation":-1}`))
	f.Add(uint8(2), []byte(`{"incarnation":18446744073709551615,"requests":[{"tenant":"acme","region":"eu","seq":1,"epoch":18446744073709551615}]}`))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tn := quota.Tenant{Name: "acme", Rate: 100 * quota.One, Burst: 100 * quota.One, Regions: []string{"eu", "us"}}
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: []quota.Tenant{tn}}, coordinator.NewMemLedger())
	if err != nil {
		f.Fatal(err)
	}
	go srv.Run(ctx)
	h, _ := remote.Handler(remote.HandlerConfig{Tokens: tokens, Lead: func() (remote.Backend, string) { return srv, "" }})
	routes := []string{"/v1/region/attach", "/v1/region/detach", "/v1/renew", "/v1/return"}
	epoch := srv.Epoch()
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		req := httptest.NewRequest("POST", routes[int(route)%len(routes)], strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tokens["eu"])
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 400, 403, 409, 413:
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		if rec.Code == 409 && rec.Header().Get("Retry-After") == "" && strings.Contains(rec.Body.String(), remote.CodeRegionHeld) {
			t.Fatalf("409 without a Retry-After: %s", rec.Body)
		}
		for _, l := range srv.Live("acme") {
			if l.Region != "eu" {
				t.Fatalf("eu's token got a lease for %s", l.Region)
			}
		}
		if srv.Epoch() != epoch {
			t.Fatalf("epoch %d, was %d: a body moved it", srv.Epoch(), epoch)
		}
	})
}
