package ops

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/afloat/afloat/quota/config"
)

// Reloaded is what a config read again (on SIGHUP) changes, as a
// process logs it: the principals whose tokens changed (regions.eu,
// operators.alice: added, removed or rotated), never the tokens; and the
// sections that changed but apply only at the next start (tenants, for
// one: after the first start the ledger holds them, and the tenants API
// changes them).
type Reloaded struct {
	Principals []string
	NotApplied []string
}

// ReloadConfig reads the config file at path again and compares it with
// old, the one the process runs with. A file that does not load (does not
// parse, a field out of range, a token file unreadable), or that adds or
// removes a region — every process of the cluster must agree on those, so
// that takes restarting them — is refused whole: the error says why, and
// the process keeps old. The error names fields, never a token.
func ReloadConfig(path string, old *config.Config) (*config.Config, Reloaded, error) {
	var r Reloaded
	cfg, err := config.LoadConfig(path)
	if err != nil {
		return nil, r, err
	}
	was, now := slices.Sorted(maps.Keys(old.Regions)), slices.Sorted(maps.Keys(cfg.Regions))
	if !slices.Equal(was, now) {
		return nil, r, fmt.Errorf("%w: regions %v, were %v: adding or removing a region takes a restart of every process", config.ErrConfigFile, now, was)
	}
	r.Principals = append(changed("regions.", old.RegionTokens(), cfg.RegionTokens()),
		changed("operators.", old.OperatorTokens(), cfg.OperatorTokens())...)
	for _, s := range []struct {
		name     string
		was, now any
	}{
		{"cluster", old.Cluster, cfg.Cluster}, {"tenants", old.Tenants, cfg.Tenants}, {"etcd", old.Etcd, cfg.Etcd},
		{"agent", old.Agent, cfg.Agent}, {"envoy", old.Envoy, cfg.Envoy}, {"proxy", old.Proxy, cfg.Proxy},
	} {
		if !reflect.DeepEqual(s.was, s.now) {
			r.NotApplied = append(r.NotApplied, s.name)
		}
	}
	return cfg, r, nil
}

// changed lists the principals, under prefix, whose tokens differ.
func changed(prefix string, was, now map[string][]string) []string {
	names := maps.Clone(was)
	maps.Copy(names, now)
	var out []string
	for _, name := range slices.Sorted(maps.Keys(names)) {
		a, inA := was[name]
		b, inB := now[name]
		if inA != inB || !slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))) {
			out = append(out, prefix+name)
		}
	}
	return out
}
