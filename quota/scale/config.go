package scale

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// ErrConfig is wrapped by every error of Config.Validate.
var ErrConfig = errors.New("scale: invalid config")

// Config says what cluster to run. DefaultConfig fills it; the zero value
// is not valid (it names no binary).
type Config struct {
	// Afloat is the afloat binary the coordinators and agents run.
	Afloat string
	// Etcd is the etcd binary (Debian's etcd-server 3.4 is what the
	// harness is run with).
	Etcd string
	// Dir holds the run: the config file, etcd's data directories, the
	// processes' output (NAME.stderr) and event logs (NAME.jsonl).
	Dir string

	// Tenants is how many tenants the config holds, every one in every
	// region, hard mode: 1 to 100,000 (the config's limit).
	Tenants int
	// Rate, Burst and Lease are each tenant's R, B and lease duration.
	Rate, Burst float64
	Lease       time.Duration
	// Regions are the region agents, one each.
	Regions []string
	// Coordinators is how many coordinator replicas run: 1 to 5.
	Coordinators int

	// MaxTxnOps is etcd's --max-txn-ops, and the config's
	// etcd.max_txn_ops: 0 leaves both at etcd's default (128).
	MaxTxnOps int
	// EventLogs gives every coordinator and agent an --event-log in Dir,
	// for afloat quota check.
	EventLogs bool
	// CoordinatorMemoryMB, when not 0, is the coordinators'
	// --memory-limit-mb (64 to 1048576).
	CoordinatorMemoryMB int
	// Handover gives every agent a --handover-file in Dir, so that an
	// agent restarted (RestartAgents) resumes its predecessor's leases
	// rather than waiting for first leases to be written.
	Handover bool
	// YAML writes the config file in YAML (quota.yaml) rather than JSON
	// (quota.json): the same config, which every process reads at its
	// start — at 100,000 tenants YAML's parser takes about 2.4 times the
	// JSON reader's time (quota/config's BenchmarkParseConfig), and a
	// restarted agent serves that much later.
	YAML bool
}

// DefaultConfig is the bench's cluster: 100,000 tenants of R 100/s, B
// 200, 10 s leases, in three regions (eu, us, ap), two coordinators, on
// etcd's default transaction limit; no event logs; agents that hand
// their leases over across a restart.
func DefaultConfig(afloat, etcd, dir string) Config {
	return Config{
		Afloat: afloat, Etcd: etcd, Dir: dir,
		Tenants: 100_000, Rate: 100, Burst: 200, Lease: 10 * time.Second,
		Regions: []string{"eu", "us", "ap"}, Coordinators: 2, Handover: true,
	}
}

// Validate checks the config, naming the field and the range.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Afloat == "":
		return bad("afloat: no binary")
	case c.Etcd == "":
		return bad("etcd: no binary")
	case c.Dir == "":
		return bad("dir: no folder")
	case c.Tenants < 1 || c.Tenants > 100_000:
		return bad("tenants %d: want 1 to 100000", c.Tenants)
	case !(c.Rate > 0 && c.Rate <= 1e9):
		return bad("rate %v: want above 0 and at most 1e9 tokens a second", c.Rate)
	case !(c.Burst >= 0 && c.Burst <= 1e12):
		return bad("burst %v: want 0 to 1e12 tokens", c.Burst)
	case c.Lease < 100*time.Millisecond || c.Lease > time.Hour:
		return bad("lease %v: want 100ms to 1h", c.Lease)
	case len(c.Regions) < 1 || len(c.Regions) > 16:
		return bad("regions %v: want 1 to 16", c.Regions)
	case c.Coordinators < 1 || c.Coordinators > 5:
		return bad("coordinators %d: want 1 to 5", c.Coordinators)
	case c.MaxTxnOps != 0 && (c.MaxTxnOps < 8 || c.MaxTxnOps > 1_000_000):
		return bad("max txn ops %d: want 0 (etcd's default) or 8 to 1000000", c.MaxTxnOps)
	case c.CoordinatorMemoryMB != 0 && (c.CoordinatorMemoryMB < 64 || c.CoordinatorMemoryMB > 1<<20):
		return bad("coordinator memory %d MiB: want 0 (no limit) or 64 to 1048576", c.CoordinatorMemoryMB)
	}
	seen := map[string]bool{}
	for _, r := range c.Regions {
		if !validName(r) || seen[r] {
			return bad("regions %v: want distinct names of letters and digits", c.Regions)
		}
		seen[r] = true
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// TenantName is the name of the i-th tenant (from 0): t00000 to t99999.
func TenantName(i int) string { return fmt.Sprintf("t%05d", i) }

// RegionToken is the bearer token of a region in the generated config.
func RegionToken(region string) string { return region + "-token-scale-0123456789" }

// WriteQuota writes the cluster's config file, one line a tenant, so
// that 100,000 tenants are 7 to 9 MB: JSON, or with Config.YAML YAML.
func (c Config) WriteQuota(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	if !c.YAML {
		return c.writeJSON(bw)
	}
	fmt.Fprintf(bw, "# Written by quota/scale: %d tenants in regions %v.\ncluster: scale\nregions:\n", c.Tenants, c.Regions)
	for _, r := range c.Regions {
		fmt.Fprintf(bw, "  %s: {token: %q}\n", r, RegionToken(r))
	}
	bw.WriteString("tenants:\n")
	rate := strconv.FormatFloat(c.Rate, 'g', -1, 64)
	burst := strconv.FormatFloat(c.Burst, 'g', -1, 64)
	for i := range c.Tenants {
		fmt.Fprintf(bw, "  - {name: %s, rate: %s, burst: %s, mode: hard, lease_duration: %s}\n", TenantName(i), rate, burst, c.Lease)
	}
	if c.MaxTxnOps != 0 {
		fmt.Fprintf(bw, "etcd: {max_txn_ops: %d}\n", c.MaxTxnOps)
	}
	return bw.Flush()
}

// writeJSON is WriteQuota in JSON.
func (c Config) writeJSON(bw *bufio.Writer) error {
	fmt.Fprintf(bw, "{\"cluster\": \"scale\",\n \"regions\": {")
	for i, r := range c.Regions {
		if i > 0 {
			bw.WriteString(", ")
		}
		fmt.Fprintf(bw, "%q: {\"token\": %q}", r, RegionToken(r))
	}
	bw.WriteString("},\n")
	if c.MaxTxnOps != 0 {
		fmt.Fprintf(bw, " \"etcd\": {\"max_txn_ops\": %d},\n", c.MaxTxnOps)
	}
	bw.WriteString(" \"tenants\": [\n")
	rate := strconv.FormatFloat(c.Rate, 'g', -1, 64)
	burst := strconv.FormatFloat(c.Burst, 'g', -1, 64)
	for i := range c.Tenants {
		sep := ","
		if i == c.Tenants-1 {
			sep = ""
		}
		fmt.Fprintf(bw, "  {\"name\": %q, \"rate\": %s, \"burst\": %s, \"mode\": \"hard\", \"lease_duration\": %q}%s\n", TenantName(i), rate, burst, c.Lease.String(), sep)
	}
	bw.WriteString(" ]}\n")
	return bw.Flush()
}

// ConfigName is the config file's name in Dir: quota.json, or with
// Config.YAML quota.yaml.
func (c Config) ConfigName() string {
	if c.YAML {
		return "quota.yaml"
	}
	return "quota.json"
}

// writeQuotaFile writes WriteQuota's config to path.
func (c Config) writeQuotaFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := c.WriteQuota(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
