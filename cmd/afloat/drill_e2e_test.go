package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/afloat/afloat/sim"
	"github.com/afloat/afloat/web"
)

// notification is what the test's pager received: an alert's status and
// the drill's simulated minute when it came.
type notification struct {
	alert, status string
	minute        int
}

// predictedPage is the first minute at which the page rule of
// docs/drill-alerts.yml holds on the run's frames, as Prometheus
// evaluates it on the drill's counters: each window's error ratio over
// the minutes it covers since the drill began (a window reaching back
// before the first scrape reads from there).
func predictedPage(frames []sim.Frame) int {
	ratio := func(m, w int) float64 {
		var errs, all float64
		for i := max(0, m-w+1); i <= m; i++ {
			errs += frames[i].AdmittedPerS * frames[i].ErrorRate
			all += frames[i].AdmittedPerS
		}
		return errs / all
	}
	for m := range frames {
		if (ratio(m, 60) > 14.4e-3 && ratio(m, 5) > 14.4e-3) || (ratio(m, 360) > 6e-3 && ratio(m, 30) > 6e-3) {
			return m
		}
	}
	return -1
}

// lookTool is the path of a Debian prometheus tool, or a skip (a failure
// under AFLOAT_REQUIRE_PROMETHEUS, as make test-long sets it after
// installing them).
func lookTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("AFLOAT_REQUIRE_PROMETHEUS") != "" {
			t.Fatalf("%s is not on PATH and AFLOAT_REQUIRE_PROMETHEUS is set: %v", name, err)
		}
		t.Skipf("%s is not on PATH (Debian's %s package; make test-long installs it)", name, pkg)
	}
	return p
}

// waitUntil polls cond every 100 ms until it holds, or fails the test
// after d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// getJSON decodes a GET's JSON answer into v, reporting whether it came.
func getJSON(u string, v any) bool {
	resp, err := http.Get(u)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}

// TestDrillAlertsEndToEnd runs a drill as a team would: afloat drill on
// the bad-deploy scenario at a simulated minute a second, Debian's
// prometheus scraping it with docs/drill-alerts.yml scaled to that speed
// (afloat drill rules) and docs/drill-prometheus.yml, and Debian's
// prometheus-alertmanager with docs/drill-alertmanager.yml, whose pager
// is this test. The page must reach the pager within the minutes the
// rule predicts on the run's own frames; a rollback through afloat drill
// lever must resolve it; and the postmortem must list the alert, the
// lever and the reveal, scored as the console's debrief scores the same
// share link.
func TestDrillAlertsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs afloat drill, Prometheus and Alertmanager for two and a half minutes: make test-long runs it")
	}
	prom := lookTool(t, "prometheus", "prometheus")
	am := lookTool(t, "prometheus-alertmanager", "prometheus-alertmanager")
	bin := testBinary(t, "")
	dir := evidenceDir(t, "drill-e2e", "*.log", "*.yml", "postmortem.md")
	drillAddr, promAddr, amAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	drillURL := "http://" + drillAddr

	// The pager: every notification, with the drill's minute when it came.
	var mu sync.Mutex
	var got []notification
	pager := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n struct {
			Alerts []struct {
				Status string            `json:"status"`
				Labels map[string]string `json:"labels"`
			} `json:"alerts"`
		}
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			t.Errorf("the pager got a notification it cannot read: %v", err)
		}
		var st struct{ Minute int }
		getJSON(drillURL+"/status", &st)
		mu.Lock()
		defer mu.Unlock()
		for _, a := range n.Alerts {
			got = append(got, notification{a.Labels["alertname"], a.Status, st.Minute})
		}
	}))
	defer pager.Close()
	seen := func(alert, status string) (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range got {
			if n.alert == alert && n.status == status {
				return n.minute, true
			}
		}
		return 0, false
	}

	token := filepath.Join(dir, "drill.token")
	must(t, os.WriteFile(token, []byte("drill-e2e-token-0123456789\n"), 0o600))
	rules, err := exec.Command(bin, "drill", "rules", "--speed", "1s", filepath.Join("..", "..", "docs", "drill-alerts.yml")).Output()
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "drill-alerts-1s.yml"), rules, 0o644))
	example := func(name string, replace ...string) string {
		raw, err := os.ReadFile(filepath.Join("..", "..", "docs", name))
		must(t, err)
		s := string(raw)
		for i := 0; i < len(replace); i += 2 {
			if !strings.Contains(s, replace[i]) {
				t.Fatalf("docs/%s has no %q any more", name, replace[i])
			}
			s = strings.ReplaceAll(s, replace[i], replace[i+1])
		}
		path := filepath.Join(dir, name)
		must(t, os.WriteFile(path, []byte(s), 0o644))
		return path
	}
	promCfg := example("drill-prometheus.yml", "drill-alerts-5s.yml", "drill-alerts-1s.yml",
		"127.0.0.1:8081", drillAddr, "127.0.0.1:9093", amAddr)
	amCfg := example("drill-alertmanager.yml", "http://127.0.0.1:5001/page", pager.URL+"/page",
		"127.0.0.1:8081", drillAddr, "credentials_file: drill.token", "credentials_file: "+token)

	procs := []*proc{
		{t: t, name: "alertmanager", bin: am, log: filepath.Join(dir, "alertmanager.log"), args: []string{"--config.file=" + amCfg,
			"--storage.path=" + filepath.Join(dir, "am"), "--web.listen-address=" + amAddr, "--cluster.listen-address="}},
		{t: t, name: "prometheus", bin: prom, log: filepath.Join(dir, "prometheus.log"), args: []string{"--config.file=" + promCfg,
			"--storage.tsdb.path=" + filepath.Join(dir, "prom"), "--web.listen-address=" + promAddr}},
	}
	for _, p := range procs {
		defer p.stop()
		p.start()
	}
	for _, addr := range []string{amAddr, promAddr} {
		waitUntil(t, 30*time.Second, addr+" ready", func() bool {
			resp, err := http.Get("http://" + addr + "/-/ready")
			if err == nil {
				resp.Body.Close()
			}
			return err == nil && resp.StatusCode == 200
		})
	}

	const seed = 7
	drill := &proc{t: t, name: "drill", bin: bin, log: filepath.Join(dir, "drill.log"), args: []string{"drill",
		"--scenario", "bad-deploy", "--seed", fmt.Sprint(seed), "--speed", "1s", "--listen", drillAddr, "--token-file", token,
		"--postmortem", filepath.Join(dir, "postmortem.md")}}
	defer drill.stop()
	drill.start()
	waitUntil(t, 10*time.Second, "the drill serving", func() bool { return getJSON(drillURL+"/status", &struct{}{}) })

	frames, err := sim.Run(sim.Config{Scenario: "bad-deploy", Seed: seed, Noise: true})
	must(t, err)
	predicted := predictedPage(frames)
	if predicted < 10 {
		t.Fatalf("the page rule predicts minute %d on the frames", predicted)
	}
	// Around the minute the rule holds: up to four minutes after it for a
	// scrape, an evaluation, the Alertmanager's group_wait and the
	// webhook, each a second or less at a simulated minute a second; up
	// to two before it, as rate() extrapolates a window's counters to its
	// edges and a scrape lands anywhere in a minute (on a prediction of
	// 13, Prometheus fired at 12 in one run; the pager heard the page at
	// 13 in that run, at 14 in another).
	waitUntil(t, 60*time.Second, "the page at the pager", func() bool { _, ok := seen("ErrorBudgetBurnFast", "firing"); return ok })
	paged, _ := seen("ErrorBudgetBurnFast", "firing")
	t.Logf("the page rule predicts minute %d; the page reached the pager at minute %d", predicted, paged)
	if paged < predicted-2 || paged > predicted+4 {
		t.Errorf("the page reached the pager at minute %d; the rule predicts minute %d (from 2 minutes before to 4 after at this speed)", paged, predicted)
	}

	out, err := exec.Command(bin, "drill", "lever", "rollback", "--addr", drillAddr, "--token-file", token).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "rollback takes effect at") {
		t.Fatalf("afloat drill lever rollback: %v\n%s", err, out)
	}
	waitUntil(t, 60*time.Second, "the page resolved at the pager", func() bool { _, ok := seen("ErrorBudgetBurnFast", "resolved"); return ok })

	var st struct {
		Ended bool
		Share string
	}
	waitUntil(t, 150*time.Second, "the drill's end", func() bool { return getJSON(drillURL+"/status", &st) && st.Ended })
	var pm []byte
	waitUntil(t, 30*time.Second, "the postmortem written", func() bool {
		pm, _ = os.ReadFile(filepath.Join(dir, "postmortem.md"))
		return strings.Contains(string(pm), "## Replay")
	})

	console := httptest.NewServer(web.Handler(web.DefaultConfig()))
	defer console.Close()
	var debrief struct{ Score sim.Score }
	if !getJSON(console.URL+"/api/debrief?"+st.Share, &debrief) {
		t.Fatalf("the console's debrief of %s: no answer", st.Share)
	}
	for _, want := range []string{
		"A bad deploy at 09:10",
		"Alert **ErrorBudgetBurnFast** (page) fired",
		"Lever: rollback",
		fmt.Sprintf("**%.1f points**", debrief.Score.Points),
		"/?" + st.Share + "#debrief",
	} {
		if !strings.Contains(string(pm), want) {
			t.Errorf("the postmortem lacks %q:\n%s", want, pm)
		}
	}
	t.Logf("the postmortem:\n%s", pm)
	if q, _ := url.ParseQuery(st.Share); !strings.Contains(q.Get("actions"), "rollback") {
		t.Errorf("share link %s: no rollback", st.Share)
	}
	drill.cmd.Process.Signal(syscall.SIGINT) //nolint:errcheck
	select {
	case <-drill.done:
	case <-time.After(10 * time.Second):
		t.Error("afloat drill did not stop within 10 s of SIGINT")
	}
	if t.Failed() {
		log, _ := os.ReadFile(filepath.Join(dir, "drill.log"))
		t.Logf("afloat drill's log:\n%s", log)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
