package scale

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Histogram is a Prometheus histogram as scraped: cumulative counts by
// upper bound, the last bound +Inf.
type Histogram struct {
	Bounds []float64 `json:"bounds"`
	Counts []float64 `json:"counts"`
	Count  float64   `json:"count"`
	Sum    float64   `json:"sum"`
}

// Add is h and o summed bucket by bucket (o's bounds must be h's, or h
// empty).
func (h Histogram) Add(o Histogram) Histogram {
	if len(h.Bounds) == 0 {
		return Histogram{Bounds: slices.Clone(o.Bounds), Counts: slices.Clone(o.Counts), Count: o.Count, Sum: o.Sum}
	}
	out := Histogram{Bounds: slices.Clone(h.Bounds), Counts: slices.Clone(h.Counts), Count: h.Count + o.Count, Sum: h.Sum + o.Sum}
	for i := range out.Counts {
		if i < len(o.Counts) {
			out.Counts[i] += o.Counts[i]
		}
	}
	return out
}

// Sub is h less an earlier scrape of it: what was observed between the
// two. A process restarted between them has counts below old's: then h
// is returned whole (what the new process observed).
func (h Histogram) Sub(old Histogram) Histogram {
	if old.Count > h.Count || len(old.Counts) != len(h.Counts) {
		return h
	}
	out := Histogram{Bounds: slices.Clone(h.Bounds), Counts: slices.Clone(h.Counts), Count: h.Count - old.Count, Sum: h.Sum - old.Sum}
	for i := range out.Counts {
		out.Counts[i] -= old.Counts[i]
	}
	return out
}

// Quantile is the q-quantile as Prometheus's histogram_quantile reads
// it: linear within the bucket it falls in, the bucket's upper bound
// when that is the last finite one. NaN for an empty histogram.
func (h Histogram) Quantile(q float64) float64 {
	if h.Count == 0 || len(h.Counts) == 0 {
		return math.NaN()
	}
	rank := q * h.Count
	for i, c := range h.Counts {
		if c < rank {
			continue
		}
		if math.IsInf(h.Bounds[i], 1) {
			if i == 0 {
				return math.NaN()
			}
			return h.Bounds[i-1]
		}
		lo, below := 0.0, 0.0
		if i > 0 {
			lo, below = h.Bounds[i-1], h.Counts[i-1]
		}
		if c == below {
			return h.Bounds[i]
		}
		return lo + (h.Bounds[i]-lo)*(rank-below)/(c-below)
	}
	return h.Bounds[len(h.Bounds)-1]
}

// scrape reads the Prometheus text at url line by line — a region
// agent's with 100,000 tenants is over a million samples, so nothing is
// kept but what want asks for — and calls got with each wanted sample's
// name, its labels ({…} as written) and value. It returns the bytes read.
func scrape(ctx context.Context, client *http.Client, url string, want func(name string) bool, got func(name, labels string, v float64)) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, err
	}
	// Plain text: gzip would cost the process measured CPU time.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("scale: GET %s: %s", url, resp.Status)
	}
	cr := &countingReader{r: resp.Body}
	sc := bufio.NewScanner(cr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		end := bytes.IndexAny(line, "{ ")
		if end < 0 || !want(string(line[:end])) {
			continue
		}
		name, labels, rest := string(line[:end]), "", line[end:]
		if rest[0] == '{' {
			close := bytes.LastIndexByte(rest, '}')
			if close < 0 {
				continue
			}
			labels, rest = string(rest[:close+1]), rest[close+1:]
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(string(f[0]), 64)
		if err != nil {
			continue
		}
		got(name, labels, v)
	}
	if err := sc.Err(); err != nil {
		return cr.n, fmt.Errorf("scale: GET %s: %w", url, err)
	}
	return cr.n, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// label is the value of label name in labels ({a="x",b="y"}), "" if
// absent. The values here are plain (names of tenants, regions, results).
func label(labels, name string) string {
	i := strings.Index(labels, name+`="`)
	for i > 0 && labels[i-1] != '{' && labels[i-1] != ',' {
		j := strings.Index(labels[i+1:], name+`="`)
		if j < 0 {
			return ""
		}
		i += 1 + j
	}
	if i < 0 {
		return ""
	}
	rest := labels[i+len(name)+2:]
	end := strings.IndexByte(rest, '"')
	if end < 0 {
		return ""
	}
	return rest[:end]
}

// AgentMetrics is what the harness reads of a region agent's GET
// /metrics: its renewals' latency histogram by result (granted, failed).
type AgentMetrics struct {
	Renewals map[string]Histogram `json:"renewals"`
	// Bytes is the size of the scrape and Took how long it took: with
	// many tenants a scrape is large, and its cost is the agent's.
	Bytes int64         `json:"bytes"`
	Took  time.Duration `json:"took_ns"`
	At    time.Time     `json:"at"`
}

const renewalMetric = "afloat_quota_region_renewal_duration_seconds"

// ScrapeAgent reads agent i's renewal histogram from its GET /metrics.
// The scrape holds every tenant's series (12 a tenant): at 100,000
// tenants over a million lines, which the agent must write within its
// own bounds (10 s).
func (c *Cluster) ScrapeAgent(ctx context.Context, i int) (AgentMetrics, error) {
	m := AgentMetrics{Renewals: map[string]Histogram{}}
	began := time.Now()
	client := &http.Client{Timeout: time.Minute}
	type bucket struct{ le, n float64 }
	buckets := map[string][]bucket{}
	n, err := scrape(ctx, client, c.AgentURLs[i]+"/metrics", func(name string) bool {
		return strings.HasPrefix(name, renewalMetric)
	}, func(name, labels string, v float64) {
		switch name {
		case renewalMetric + "_bucket":
			le, err := strconv.ParseFloat(label(labels, "le"), 64)
			if err == nil {
				r := label(labels, "result")
				buckets[r] = append(buckets[r], bucket{le, v})
			}
		case renewalMetric + "_count":
			h := m.Renewals[label(labels, "result")]
			h.Count = v
			m.Renewals[label(labels, "result")] = h
		case renewalMetric + "_sum":
			h := m.Renewals[label(labels, "result")]
			h.Sum = v
			m.Renewals[label(labels, "result")] = h
		}
	})
	for r, bs := range buckets {
		slices.SortFunc(bs, func(a, b bucket) int { return cmpFloat(a.le, b.le) })
		h := m.Renewals[r]
		for _, b := range bs {
			h.Bounds, h.Counts = append(h.Bounds, b.le), append(h.Counts, b.n)
		}
		m.Renewals[r] = h
	}
	m.Bytes, m.Took, m.At = n, time.Since(began), began.Add(time.Since(began)/2)
	return m, err
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// RunStats are a region agent's run counters (region.RunStats), as its
// GET /v1/status reports them: cheap to read at any number of tenants.
// An agent that predates a counter reports it as 0.
type RunStats struct {
	Renewals        int64 `json:"renewals"`
	RenewFailures   int64 `json:"renew_failures"`
	Installed       int64 `json:"installed"`
	Kept            int64 `json:"kept"`
	Ignored         int64 `json:"ignored"`
	Returns         int64 `json:"returns"`
	ReturnFailures  int64 `json:"return_failures"`
	JournalFailures int64 `json:"journal_failures"`
	// Batches are the renewal calls sent (each carries many tenants'
	// renewals), and the calls that failed whole, and the renewals
	// refused one by one, by reason.
	Batches            int64 `json:"batches"`
	BatchesBusy        int64 `json:"batches_busy"`
	BatchesTimedOut    int64 `json:"batches_timed_out"`
	BatchesUnavailable int64 `json:"batches_unavailable"`
	BatchesHeld        int64 `json:"batches_held"`
	RefusedUnknown     int64 `json:"refused_unknown"`
	RefusedFenced      int64 `json:"refused_fenced"`
	RefusedBusy        int64 `json:"refused_busy"`
	RefusedOther       int64 `json:"refused_other"`
}

// failures are the counters of calls and renewals that failed, by name.
func (r RunStats) failures() map[string]int64 {
	return map[string]int64{
		"calls_busy": r.BatchesBusy, "calls_timed_out": r.BatchesTimedOut, "calls_unavailable": r.BatchesUnavailable,
		"calls_held": r.BatchesHeld, "refused_unknown": r.RefusedUnknown, "refused_fenced": r.RefusedFenced,
		"refused_busy": r.RefusedBusy, "refused_other": r.RefusedOther,
	}
}

// AgentRun reads agent i's run counters from its GET /v1/status, and
// when it read them.
func (c *Cluster) AgentRun(ctx context.Context, i int) (RunStats, time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.AgentURLs[i]+"/v1/status", nil)
	if err != nil {
		return RunStats{}, time.Time{}, err
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	at := time.Now()
	if err != nil {
		return RunStats{}, at, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return RunStats{}, at, fmt.Errorf("scale: GET %s/v1/status: %s", c.AgentURLs[i], resp.Status)
	}
	var st struct {
		Run *RunStats `json:"run"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.Run == nil {
		return RunStats{}, at, fmt.Errorf("scale: GET %s/v1/status: no run counters (%v)", c.AgentURLs[i], err)
	}
	return *st.Run, at, nil
}

// EtcdMetrics are etcd's own counters, read from one member's GET
// /metrics: raft proposals committed (every write: a transaction, a put,
// a lease granted or revoked), multi-operation transactions, puts (in
// transactions or alone), and the database's size. Every member applies
// every write, so any member's counters count them all.
type EtcdMetrics struct {
	Proposals float64 `json:"proposals_committed"`
	Txns      float64 `json:"txns"`
	Puts      float64 `json:"puts"`
	DBBytes   float64 `json:"db_bytes"`
	Leader    bool    `json:"leader"`
	// Fsync is the member's write-ahead log's fsyncs: every commit of
	// raft entries waits for one.
	Fsync Histogram `json:"wal_fsync"`
	At    time.Time `json:"at"`
}

var etcdNames = map[string]bool{
	"etcd_server_proposals_committed_total": true, "etcd_mvcc_txn_total": true, "etcd_mvcc_put_total": true,
	"etcd_mvcc_db_total_size_in_bytes": true, "etcd_server_is_leader": true,
	fsyncMetric + "_bucket": true, fsyncMetric + "_count": true, fsyncMetric + "_sum": true,
}

const fsyncMetric = "etcd_disk_wal_fsync_duration_seconds"

// ScrapeEtcd reads member i's counters.
func (c *Cluster) ScrapeEtcd(ctx context.Context, i int) (EtcdMetrics, error) {
	var m EtcdMetrics
	_, err := scrape(ctx, c.http, c.EtcdURLs[i]+"/metrics", func(name string) bool { return etcdNames[name] },
		func(name, labels string, v float64) {
			switch name {
			case fsyncMetric + "_bucket":
				if le, err := strconv.ParseFloat(label(labels, "le"), 64); err == nil {
					m.Fsync.Bounds, m.Fsync.Counts = append(m.Fsync.Bounds, le), append(m.Fsync.Counts, v)
				}
			case fsyncMetric + "_count":
				m.Fsync.Count = v
			case fsyncMetric + "_sum":
				m.Fsync.Sum = v
			case "etcd_server_proposals_committed_total":
				m.Proposals = v
			case "etcd_mvcc_txn_total":
				m.Txns = v
			case "etcd_mvcc_put_total":
				m.Puts = v
			case "etcd_mvcc_db_total_size_in_bytes":
				m.DBBytes = v
			case "etcd_server_is_leader":
				m.Leader = v == 1
			}
		})
	m.At = time.Now()
	return m, err
}
