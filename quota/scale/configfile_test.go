package scale

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/afloat/afloat/quota/config"
)

// TestConfigFileFormats: the config file, in JSON and in YAML, is one
// config to the processes that read it — every tenant in every region,
// with the bench's limits and lease, and etcd's transaction limit.
func TestConfigFileFormats(t *testing.T) {
	cfg := DefaultConfig("afloat", "etcd", t.TempDir())
	cfg.Tenants, cfg.MaxTxnOps = 1000, 1024
	var read []*config.Config
	for _, yaml := range []bool{false, true} {
		cfg.YAML = yaml
		var b bytes.Buffer
		if err := cfg.WriteQuota(&b); err != nil {
			t.Fatal(err)
		}
		c, err := config.ParseConfig(b.Bytes())
		if err != nil {
			t.Fatalf("YAML %v: %v", yaml, err)
		}
		if len(c.Tenants) != 1000 || len(c.Regions) != 3 || c.Etcd.MaxTxnOps != 1024 {
			t.Fatalf("YAML %v: %d tenants, %d regions, max txn ops %d", yaml, len(c.Tenants), len(c.Regions), c.Etcd.MaxTxnOps)
		}
		if tn := c.Tenants[999]; tn.Name != TenantName(999) || tn.Rate != 100 || tn.Burst != 200 || tn.Mode != "hard" || *tn.LeaseDuration != 10*time.Second {
			t.Fatalf("YAML %v: the last tenant %+v", yaml, tn)
		}
		read = append(read, c)
	}
	if !reflect.DeepEqual(read[0], read[1]) {
		t.Error("the JSON and the YAML file read as different configs")
	}
}
