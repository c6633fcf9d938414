package service

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scraped is one scrape of GET /metrics, parsed.
type scraped map[string]*dto.MetricFamily

// scrape fetches and parses base+"/metrics".
func scrape(t *testing.T, base string) scraped {
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

// value is the value of the sample of name whose labels include labels
// (name=value pairs); for a histogram, its count. ok is false when there
// is none.
func (s scraped) value(name string, labels ...string) (float64, bool) {
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

// must is value, failing the test when the sample is missing.
func (s scraped) must(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	v, ok := s.value(name, labels...)
	if !ok {
		t.Fatalf("no sample %s%v in the scrape", name, labels)
	}
	return v
}

// readyz is GET base/readyz: the status and the body.
func readyz(t *testing.T, base string) (int, Readiness) {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rd Readiness
	if err := json.NewDecoder(resp.Body).Decode(&rd); err != nil {
		t.Fatalf("GET %s/readyz: %v", base, err)
	}
	return resp.StatusCode, rd
}

func healthz(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck
	resp.Body.Close()
	return resp.StatusCode
}
