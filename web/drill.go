package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/afloat/afloat/drill"
)

// The console's view of a running drill (Config.Drill; docs/drill.md,
// "Project the drill"): GET /api/drill reads the drill's status, and the
// play page (/?drill=1) replays the run so far — the scenario, the seed
// and the levers the team pulled — stopped at the minute under way, its
// levers locked, so that a facilitator can project it. The console reads
// the drill, never the reverse, and reads it server-side: the page
// connects only to its own origin (the content security policy's
// connect-src 'self'), and the drill needs no cross-origin rule.

// drillTTL is how long a status read from the drill answers every page
// that asks: pages poll every second, and a projector, a laptop and a
// few phones cost the drill one read a TTL between them.
const drillTTL = 500 * time.Millisecond

// drillTimeout bounds one read of the drill's status.
const drillTimeout = 2 * time.Second

// drillView is GET /api/drill's answer: the drill's status, its address
// and the run so far as a share link's query, which the page decodes as
// it decodes any share link (one codec, sim's).
type drillView struct {
	drill.Status
	URL string `json:"url"`
	Run string `json:"run"`
}

// drillFollower reads the drill at base, one read at a time, each
// answering the pages that ask within drillTTL of it.
type drillFollower struct {
	base   string
	client *http.Client

	mu   sync.Mutex // held for a read: the pages that ask meanwhile wait for it
	at   time.Time
	view drillView
	err  error
}

func newDrillFollower(base string) *drillFollower {
	return &drillFollower{base: strings.TrimRight(base, "/"), client: &http.Client{Timeout: drillTimeout}}
}

// read returns the status read within drillTTL, or reads it anew; a read
// lasts at most drillTimeout, and the pages that ask meanwhile wait for it.
func (f *drillFollower) read(ctx context.Context) (drillView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.at.IsZero() && time.Since(f.at) < drillTTL {
		return f.view, f.err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drillTimeout)
	defer cancel()
	st, err := drill.ReadStatus(rctx, f.client, f.base)
	f.at, f.err = time.Now(), err
	if err == nil {
		f.view = drillView{Status: st, URL: f.base, Run: st.RunSoFar().Query().Encode()}
	}
	return f.view, f.err
}

func (f *drillFollower) get(w http.ResponseWriter, r *http.Request) {
	if f == nil {
		writeError(w, http.StatusNotFound, "drill", "this console follows no drill: start it with --drill URL, the address afloat drill prints (docs/drill.md)")
		return
	}
	v, err := f.read(r.Context())
	switch {
	case errors.Is(err, drill.ErrBadStatus):
		writeError(w, http.StatusBadGateway, "drill", err.Error())
	case err != nil:
		writeError(w, http.StatusBadGateway, "drill", fmt.Sprintf("the drill at %s does not answer: %v", f.base, err))
	default:
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, v)
	}
}

// checkDrillURL accepts the base URL of a drill: http or https, a host,
// and nothing after it but a slash.
func checkDrillURL(s string) error {
	u, err := url.Parse(s)
	want := fmt.Errorf("%w: drill %q: want the http:// or https:// address of a running afloat drill, such as http://127.0.0.1:8081", ErrConfig, s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return want
	}
	return nil
}
