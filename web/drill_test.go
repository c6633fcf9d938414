package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afloat/afloat/drill"
	"github.com/afloat/afloat/internal/vclock"
	"github.com/afloat/afloat/sim"
)

// drillClock adapts the virtual clock to drill.Clock.
type drillClock struct{ *vclock.Clock }

func (c drillClock) AfterFunc(d time.Duration, f func()) drill.Timer {
	return c.Clock.AfterFunc(d, f)
}

// startDrill runs a drill of scenario on a free loopback port, on a
// virtual clock, and counts the reads of its status.
func startDrill(t testing.TB, scenario string, seed uint32) (*drill.Server, string, *vclock.Clock, *atomic.Int64) {
	t.Helper()
	clock := vclock.New(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))
	cfg := drill.DefaultConfig()
	cfg.Scenario, cfg.Seed, cfg.Speed, cfg.Token, cfg.Clock = scenario, seed, time.Second, "drill-token-0123456789", drillClock{clock}
	s, err := drill.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/status" {
			reads.Add(1)
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	t.Cleanup(s.Stop)
	return s, hs.URL, clock, &reads
}

// TestDrillConfig: --drill takes the http:// or https:// address of a
// drill, and refuses anything else naming the field.
func TestDrillConfig(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8081", "http://127.0.0.1:8081/", "https://drill.example:443", "http://[::1]:8081"} {
		c := DefaultConfig()
		c.Drill = ok
		if err := c.Validate(); err != nil {
			t.Errorf("drill %q: %v", ok, err)
		}
	}
	for _, bad := range []string{"127.0.0.1:8081", "ftp://127.0.0.1:8081", "http://", "http://u:p@127.0.0.1:8081", "http://127.0.0.1:8081/status", "http://127.0.0.1:8081/?x=1", "http://127.0.0.1:8081/#x", "::"} {
		c := DefaultConfig()
		c.Drill = bad
		err := c.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "drill ") || !strings.Contains(err.Error(), "want the http:// or https:// address") {
			t.Errorf("drill %q: %v; want ErrConfig naming drill and what it takes", bad, err)
		}
	}
}

// getDrill asks the console at h for GET /api/drill.
func getDrill(t *testing.T, h http.Handler) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/api/drill", nil)
	req.Host = "127.0.0.1:8080"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("GET /api/drill: %d, body not JSON: %v: %s", w.Code, err, w.Body)
	}
	return w.Code, body
}

// TestAPIDrill: GET /api/drill answers the followed drill's status with
// its address and the run so far as a share link's query; one read of
// the drill answers every page that asks within drillTTL. A console that
// follows no drill answers 404 naming --drill; a drill that does not
// answer, or answers what no drill sends, is a 502 saying so.
func TestAPIDrill(t *testing.T) {
	if code, body := getDrill(t, Handler(DefaultConfig())); code != http.StatusNotFound || body["field"] != "drill" || !strings.Contains(body["error"].(string), "--drill URL") {
		t.Errorf("no drill: %d %v; want 404 naming --drill", code, body)
	}

	s, url, clock, reads := startDrill(t, "bad-deploy", 7)
	clock.Advance(30 * time.Second)
	if _, err := s.Lever(sim.ControlFleetFloor, 20); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.Drill = url
	h := Handler(c)
	code, body := getDrill(t, h)
	if code != http.StatusOK || body["minute"] != 30.0 || body["url"] != url || body["run"] != "actions=31%3Afleet_floor%3A20&noise=1&scenario=bad-deploy&seed=7" || body["scenario"] != "bad-deploy" {
		t.Fatalf("GET /api/drill at minute 30: %d %v", code, body)
	}
	for range 5 {
		getDrill(t, h)
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("six pages asking at once read the drill %d times, want once", n)
	}

	c.Drill = "http://127.0.0.1:1"
	if code, body := getDrill(t, Handler(c)); code != http.StatusBadGateway || body["field"] != "drill" || !strings.Contains(body["error"].(string), "does not answer") {
		t.Errorf("a drill that does not answer: %d %v; want 502 saying so", code, body)
	}
	other := httptest.NewServer(Handler(DefaultConfig())) // a console, not a drill
	defer other.Close()
	c.Drill = other.URL
	if code, body := getDrill(t, Handler(c)); code != http.StatusBadGateway || !strings.Contains(body["error"].(string), "not a drill's status") {
		t.Errorf("a console where the drill should be: %d %v; want 502 saying it is not a drill", code, body)
	}
}
