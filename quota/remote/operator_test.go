package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/remote"
)

// tenantsAPI answers the tenants API's routes as a coordinator does
// (quota/coordinator/replica's TenantsHandler; cmd/afloat's TestQuotaTenantsRoundTrip
// drives the real one on etcd): the leader with answer, a follower (answer
// nil) with 503 {"error","leader"} naming whom leader returns. It counts
// the requests and the tokens it saw.
type tenantsAPI struct {
	srv      *httptest.Server
	requests atomic.Int64
	tokens   atomic.Int64 // requests that carried the operator's token
}

func newTenantsAPI(t *testing.T, leader func() string, answer func(w http.ResponseWriter, r *http.Request, body []byte)) *tenantsAPI {
	a := &tenantsAPI{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.requests.Add(1)
		if r.Header.Get("Authorization") == "Bearer op-token-0123456789" {
			a.tokens.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		if answer == nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]string{"error": "replica: this coordinator is not the leader", "leader": leader()})
			return
		}
		body, _ := io.ReadAll(r.Body)
		answer(w, r, body)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// TestOperatorFollowsTheLeader: given a follower first, the operator's
// request goes on to the leader the follower names, when it is one of the
// endpoints given, and the answer comes back as the leader gave it; a
// follower that names a coordinator not given is not followed there (the
// token goes nowhere else) and the error says who leads; a 4xx is the
// leader's word, asked of no one else; no leader at all is ErrNoLeader.
func TestOperatorFollowsTheLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var leaderURL atomic.Value
	follows := func() string { return leaderURL.Load().(string) }
	leader := newTenantsAPI(t, nil, func(w http.ResponseWriter, r *http.Request, body []byte) {
		switch {
		case r.Method == "GET" && r.URL.Path == "/v1/tenants":
			io.WriteString(w, `{"tenants":[{"name":"acme"}]}`)
		case r.Method == "POST" && r.URL.Path == "/v1/tenants/delete" && string(body) == `{"name":"beta","version":3}`:
			io.WriteString(w, `{}`)
		case r.URL.Path == "/v1/tenants/gamma":
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"quota: unknown tenant \"gamma\""}`)
		default:
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"unexpected `+r.Method+` `+r.URL.Path+` `+string(body)+`"}`)
		}
	})
	leaderURL.Store(leader.srv.URL)
	follower := newTenantsAPI(t, follows, nil)
	op := func(endpoints ...string) *remote.Operator {
		o, err := remote.NewOperator(remote.OperatorConfig{Endpoints: endpoints, Token: "op-token-0123456789"})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}

	both := op(follower.srv.URL, leader.srv.URL+"/")
	if out, err := both.List(ctx); err != nil || string(out) != `{"tenants":[{"name":"acme"}]}` {
		t.Fatalf("list through the follower: %s, %v", out, err)
	}
	if out, err := both.Delete(ctx, "beta", 3); err != nil || string(out) != "{}" {
		t.Fatalf("delete: %s, %v", out, err)
	}
	before := follower.requests.Load() + leader.requests.Load()
	_, err := both.Get(ctx, "gamma")
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), `unknown tenant "gamma"`) {
		t.Fatalf("get of an unknown tenant: %v; want the 404 and the leader's message", err)
	}
	if n := follower.requests.Load() + leader.requests.Load() - before; n != 1 {
		t.Errorf("a 404 went to %d coordinators; want the leader alone", n)
	}

	// Only the follower given: it names the leader, which is not followed.
	leader.tokens.Store(0)
	_, err = op(follower.srv.URL).List(ctx)
	if !errors.Is(err, remote.ErrNoLeader) || !strings.Contains(err.Error(), "is not the leader; the leader is "+leader.srv.URL) {
		t.Fatalf("the follower alone: %v; want ErrNoLeader naming the leader", err)
	}
	if leader.tokens.Load() != 0 {
		t.Fatal("the token went to a coordinator not among the endpoints")
	}

	// No one leads: the follower's own words, under ErrNoLeader.
	leaderURL.Store("")
	_, err = op(follower.srv.URL).List(ctx)
	if !errors.Is(err, remote.ErrNoLeader) || !strings.HasSuffix(err.Error(), "this coordinator is not the leader") {
		t.Fatalf("no leader: %v", err)
	}
	if _, err := remote.NewOperator(remote.OperatorConfig{Endpoints: []string{"ftp://x:1"}, Token: "t"}); err == nil {
		t.Error("an ftp endpoint was taken")
	}
}
