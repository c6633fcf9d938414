//go:build embedetcd

package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCoordinatorAndRegion: a coordinator on its embedded etcd, a region
// agent, the decision API; then bad input on the decision API; then a
// second coordinator on the same data directory is refused.
func TestCoordinatorAndRegion(t *testing.T) {
	cfg, err := ParseConfig([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	coordAddr := make(chan string, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		err := RunCoordinator(ctx, CoordinatorOptions{Config: cfg, Listen: "127.0.0.1:0", DataDir: dir, Logger: log,
			Ready: func(a string) { coordAddr <- a }})
		if err != nil {
			t.Error(err)
		}
	})
	var addr string
	select {
	case addr = <-coordAddr:
	case <-time.After(60 * time.Second):
		t.Fatal("the coordinator did not start")
	}

	// The same data directory again: refused, and why.
	err = RunCoordinator(ctx, CoordinatorOptions{Config: cfg, Listen: "127.0.0.1:0", DataDir: dir, Logger: log})
	if !errors.Is(err, ErrDataDirInUse) || !strings.Contains(err.Error(), "is locked") {
		t.Fatalf("a second coordinator on one data directory: %v", err)
	}

	a, err := NewAgent(RegionOptions{Config: cfg, Name: "eu", Coordinators: []string{"http://" + addr}, Listen: "127.0.0.1:0", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	regionAddr := make(chan string, 1)
	a.o.Ready = func(s string) { regionAddr <- s }
	wg.Go(func() {
		if err := a.Run(ctx); err != nil {
			t.Error(err)
		}
	})
	base := "http://" + <-regionAddr
	allow := func(body string) (int, AllowAnswer, string) {
		resp, err := http.Post(base+"/v1/allow", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var ans AllowAnswer
		json.Unmarshal(raw, &ans)
		return resp.StatusCode, ans, string(raw)
	}
	// Until the first lease, refused with the bounded retry policy.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, ans, raw := allow(`{"tenant":"acme","endpoint":"/","n":1}`)
		if code != 200 {
			t.Fatalf("allow: %d %s", code, raw)
		}
		if ans.Allowed {
			break
		}
		if ans.RetryAfter <= 0 {
			t.Fatalf("refused without a retry_after: %s", raw)
		}
		if time.Now().After(deadline) {
			t.Fatal("no admission within 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i, tc := range []struct {
		body string
		code int
		want string
	}{
		{`{"tenant":"mallory"}`, 404, `tenant \"mallory\": not served in region \"eu\"`},
		{`{"tenant":"acme","n":-1}`, 400, "n -1: want 1 to 1000000"},
		{`{"tenant":"acme","extra":1}`, 400, "unknown field"},
		{`{"tenant":"acme"} {}`, 400, "want one object"},
		{`{"tenant":"` + strings.Repeat("a", 5000) + `"}`, 413, "body over 4096 bytes"},
	} {
		code, _, raw := allow(tc.body)
		if code != tc.code || !strings.Contains(raw, tc.want) {
			t.Errorf("step %d: %d %s, want %d naming %q", i, code, raw, tc.code, tc.want)
		}
	}
	resp, err := http.Post(base+"/v1/allow", "text/plain", bytes.NewReader([]byte(`{"tenant":"acme"}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 415 {
		t.Fatalf("text/plain: %d", resp.StatusCode)
	}
	cancel()
}
