package opstest

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/afloat/afloat/quota/internal/ops"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scraped is one scrape of GET /metrics, parsed.
type Scraped map[string]*dto.MetricFamily

// Scrape fetches and parses base+"/metrics".
func Scrape(t testing.TB, base string) Scraped {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s/metrics: %d", base, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s/metrics: %v", base, err)
	}
	return fams
}

// Value is the value of the sample of name whose labels include labels
// (name=value pairs); for a histogram, its count. ok is false when there
// is none.
func (s Scraped) Value(name string, labels ...string) (float64, bool) {
	f := s[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// Must is Value, failing the test when the sample is missing.
func (s Scraped) Must(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	v, ok := s.Value(name, labels...)
	if !ok {
		t.Fatalf("no sample %s%v in the scrape", name, labels)
	}
	return v
}

// Readyz is GET base/readyz: the status and the body.
func Readyz(t testing.TB, base string) (int, ops.Readiness) {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rd ops.Readiness
	if err := json.NewDecoder(resp.Body).Decode(&rd); err != nil {
		t.Fatalf("GET %s/readyz: %v", base, err)
	}
	return resp.StatusCode, rd
}

// Healthz is GET base/healthz: the status.
func Healthz(t testing.TB, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck
	resp.Body.Close()
	return resp.StatusCode
}

// HistSum is a histogram's sum of observations.
func (s Scraped) HistSum(name string, labels ...string) float64 {
	f := s[name]
	if f == nil {
		return 0
	}
	var sum float64
	for _, m := range f.GetMetric() {
		ok := true
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			ok = ok && have[labels[i]] == labels[i+1]
		}
		if ok && m.Histogram != nil {
			sum += m.GetHistogram().GetSampleSum()
		}
	}
	return sum
}

// SameReadiness compares two bodies of GET /readyz.
func SameReadiness(a, b ops.Readiness) bool {
	return a.Ready == b.Ready && a.Role == b.Role && a.Leader == b.Leader && a.Epoch == b.Epoch &&
		slices.Equal(a.Waiting, b.Waiting) && a.Missing == b.Missing && a.Reason == b.Reason && a.Progress == b.Progress
}
