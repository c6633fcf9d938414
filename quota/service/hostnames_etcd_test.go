//go:build embedetcd

package service

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCoordinatorHostNames: --host adds a name the coordinator answers
// (the name regions are configured with, when it is not the advertised
// one); a --host that is not a host name is refused before anything runs.
func TestCoordinatorHostNames(t *testing.T) {
	cfg := mustConfig(t, opsConfig)
	err := RunCoordinator(context.Background(), CoordinatorOptions{Config: cfg, Listen: "127.0.0.1:0", DataDir: t.TempDir(),
		Logger: quietLog(), Hosts: []string{"http://quota.internal"}})
	if !errors.Is(err, ErrConfigFile) || !strings.Contains(err.Error(), "--host") {
		t.Fatalf("--host with a scheme: %v, want a refusal naming --host", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		err := RunCoordinator(ctx, CoordinatorOptions{Config: cfg, Listen: "127.0.0.1:0", DataDir: t.TempDir(), Logger: quietLog(),
			Hosts: []string{"quota.internal"}, Ready: func(a string) { addrc <- a }})
		if err != nil {
			t.Error(err)
		}
	})
	var addr string
	select {
	case addr = <-addrc:
	case <-time.After(60 * time.Second):
		t.Fatal("the coordinator did not start")
	}
	for i, c := range []struct {
		host string
		code int
	}{{"quota.internal:7070", 200}, {"quota.internal.", 200}, {"other.internal:7070", 421}} {
		req, _ := http.NewRequest("GET", "http://"+addr+"/healthz", nil)
		req.Host = c.host
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("step %d: Host %q: %d, want %d", i, c.host, resp.StatusCode, c.code)
		}
	}
	cancel()
}
