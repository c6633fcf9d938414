//go:build embedetcd

package replica_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/afloat/afloat/quota/coordinator/replica"
	"github.com/afloat/afloat/quota/internal/opstest"
	"github.com/afloat/afloat/quota/servicetest"
)

// TestCoordinatorHostNames: --host adds a name the coordinator answers
// (the name regions are configured with, when it is not the advertised
// one); a --host that is not a host name is refused before anything runs.
func TestCoordinatorHostNames(t *testing.T) {
	c := servicetest.New(t, opstest.ConfigFile("operators.yaml"))
	cfg := c.Config
	err := replica.Run(context.Background(), replica.Options{Config: cfg, Listen: "127.0.0.1:0", DataDir: t.TempDir(),
		Logger: opstest.QuietLog(), Hosts: []string{"http://quota.internal"}})
	if !errors.Is(err, replica.ErrOptions) || !strings.Contains(err.Error(), "--host") {
		t.Fatalf("--host with a scheme: %v, want a refusal naming --host", err)
	}
	addr := c.Coordinator(replica.Options{Hosts: []string{"quota.internal"}}).Addr
	for i, tc := range []struct {
		host string
		code int
	}{{"quota.internal:7070", 200}, {"quota.internal.", 200}, {"other.internal:7070", 421}} {
		req, _ := http.NewRequest("GET", "http://"+addr+"/healthz", nil)
		req.Host = tc.host
		resp, err := http.DefaultClient.Do(req)
		opstest.Must(t, err)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("step %d: Host %q: %d, want %d", i, tc.host, resp.StatusCode, tc.code)
		}
	}
}
