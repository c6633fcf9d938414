//go:build embedetcd

package etcdmember

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/afloat/afloat/internal/hostcheck"
	"github.com/afloat/afloat/quota/internal/opstest"
)

// TestEmbeddedEtcdListensOnLoopback: the embedded member listens on a
// loopback address, and refuses a client or peer URL beyond it (it has
// no authentication: whoever reaches it can rewrite the tenants with
// etcdctl), without keeping the refused URL in the data directory.
func TestEmbeddedEtcdListensOnLoopback(t *testing.T) {
	dir := t.TempDir()
	// (Addresses of no interface here: on the old code, which took them,
	// nothing could be bound.)
	for i, c := range []MemberConfig{
		{ClientURL: "http://10.255.255.1:2379"},
		{PeerURL: "http://192.0.2.1:2380"},
		{ClientURL: "http://[2001:db8::1]:2379"},
	} {
		c.DataDir = dir
		_, err := StartMember(context.Background(), c)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "beyond loopback") {
			t.Errorf("step %d: %+v: %v, want a refusal", i, c, err)
		}
		if _, err := os.Stat(filepath.Join(dir, urlsFile)); err == nil {
			t.Fatalf("step %d: the refused URL was kept in the data directory", i)
		}
	}
	m, err := StartMember(context.Background(), MemberConfig{DataDir: dir})
	opstest.Must(t, err)
	defer m.Close()
	u, err := url.Parse(m.ClientURL)
	if err != nil || !hostcheck.ListenLoopback(u.Host) {
		t.Fatalf("the member's client URL %q is not a loopback address", m.ClientURL)
	}
}
