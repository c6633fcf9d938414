package opstest

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/afloat/afloat/internal/freeport"
	"github.com/afloat/afloat/quota/config"
)

// ConfigFile returns the contents of a file of quota/config's testdata,
// the config files the tests of the processes share: good.yaml (two
// regions, one tenant), fronted.yaml (with the envoy and proxy sections),
// metrics.yaml (a hard and a best-effort tenant in one region).
//
// The folder is found from the module's root, the first folder up from the
// test's working directory (its package's folder) with a go.mod: not from
// runtime.Caller, whose file names are module paths in a -trimpath build
// (make test builds so, to share the build cache between clones).
func ConfigFile(name string) string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(dir)
		if up == dir {
			panic("opstest: no go.mod above the working directory")
		}
		dir = up
	}
	b, err := os.ReadFile(filepath.Join(dir, "quota", "config", "testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// MustConfig parses a config file's contents or fails the test.
func MustConfig(t testing.TB, s string) *config.Config {
	t.Helper()
	cfg, err := config.ParseConfig([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// QuietLog is a logger that discards everything.
func QuietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// FreeAddr is a free loopback address, so that a process can be given
// another's address before that one listens: below the kernel's
// ephemeral range (internal/freeport), whose ports outgoing connections
// may take meanwhile — under make test's load one did ("bind: address
// already in use", a coordinator started seconds after its address was
// chosen).
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// WaitFor polls cond every 50 ms for up to 30 s, and fails the test if
// it does not hold by then: for what a process does on its own clock
// (a renewal, an election), which no test can step.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Must fails the test if err is not nil.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Buffer is a log's buffer written by several goroutines: the zero
// value is empty and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Call sends a request to url with a bearer token and a Content-Type
// (each left out when empty) and returns the status and the JSON object
// answered (nil if the body is not one).
func Call(t testing.TB, method, url, token, ctype, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out) //nolint:errcheck // a body that is not JSON is nil
	return resp.StatusCode, out
}

// Len is the count of bytes written.
func (s *Buffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}
