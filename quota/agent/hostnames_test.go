package agent

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/afloat/afloat/quota/internal/opstest"
)

// TestAgentHostNames: --host adds names, --listen's own host is one, and
// --allow-remote lets the agent listen beyond loopback, with a warning;
// on a loopback address it changes nothing, and says so (when it runs:
// TestRunWarnsOfAllowRemoteOnLoopback).
func TestAgentHostNames(t *testing.T) {
	a, err := New(Options{Config: opstest.MustConfig(t, good), Name: "eu", Coordinators: []string{"http://127.0.0.1:1"},
		Listen: "127.0.0.1:0", Logger: opstest.QuietLog(), Hosts: []string{"quota.internal", "10.0.0.5"}})
	opstest.Must(t, err)
	h := a.Handler()
	for i, c := range []struct {
		host string
		code int
	}{{"quota.internal:7080", 200}, {"QUOTA.INTERNAL.", 200}, {"10.0.0.5:7080", 200}, {"quota.internal.evil.example", 421}, {"10.0.0.6", 421}} {
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host = c.host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.code {
			t.Errorf("step %d: Host %q: %d, want %d", i, c.host, rec.Code, c.code)
		}
	}
	if _, err := New(Options{Config: opstest.MustConfig(t, good), Name: "eu", Coordinators: []string{"127.0.0.1:1"}, Listen: "127.0.0.1:0",
		Logger: opstest.QuietLog(), Hosts: []string{"evil.example:80"}}); !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), "--host") {
		t.Errorf("--host with a port: %v, want a refusal naming --host", err)
	}
	a, err = New(Options{Config: opstest.MustConfig(t, good), Name: "eu", Coordinators: []string{"127.0.0.1:1"}, Listen: "192.0.2.1:7080",
		AllowRemote: true, Logger: opstest.QuietLog()})
	opstest.Must(t, err)
	req := httptest.NewRequest("GET", "/healthz", nil)
	req.Host = "192.0.2.1:7080"
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("the --listen host: %d, want 200", rec.Code)
	}

	// The warnings: beyond loopback, that the API has no authentication;
	// on loopback, that the flag changes nothing (Run logs it:
	// TestRunWarnsOfAllowRemoteOnLoopback).
	o := Options{Listen: "0.0.0.0:7080", AllowRemote: true}
	if w := o.listenWarning("0.0.0.0:7080"); !strings.Contains(w, "beyond loopback and has no authentication") {
		t.Errorf("--listen 0.0.0.0:7080 --allow-remote: warning %q", w)
	}
	if o.AllowRemote = false; o.listenWarning("x") != "" {
		t.Error("a warning without --allow-remote")
	}
}
