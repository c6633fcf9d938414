package replica

import (
	"log/slog"
	"sync"

	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/internal/ops"
	"github.com/afloat/afloat/quota/remote"
)

// reloader reads the config file again when asked (Options.Reload):
// what it applies without a restart is the tokens — the regions' and the
// operators' keyrings — and the certificates.
type reloader struct {
	path               string
	regions, operators *remote.Keyring
	certs              *ops.ServerCerts // nil without TLS
	log                *slog.Logger

	mu  sync.Mutex
	cfg *config.Config // the config in use
}

// reload reads the file, checks it whole, and only then applies it: a
// refusal changes nothing. Neither the log nor its errors hold a token.
func (rl *reloader) reload() {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	refuse := func(err error) {
		rl.log.Error("quota coordinator: config not reloaded; the one in use stays", "config", rl.path, "err", err)
	}
	cfg, ch, err := ops.ReloadConfig(rl.path, rl.cfg)
	if err == nil {
		err = checkCertOnly(cfg, rl.certs.Mutual())
	}
	if err != nil {
		refuse(err)
		return
	}
	// Checked before anything is applied: keyrings refuse a token two
	// principals share, which the config's validation has refused too.
	regions, operators := cfg.RegionTokens(), cfg.OperatorTokens()
	check := &remote.Keyring{}
	if err := check.Set(regions); err != nil {
		refuse(err)
		return
	}
	if err := check.Set(operators); err != nil {
		refuse(err)
		return
	}
	if rl.certs != nil {
		if err := rl.certs.Reload(); err != nil {
			refuse(err)
			return
		}
	}
	rl.regions.Set(regions)     //nolint:errcheck // checked above
	rl.operators.Set(operators) //nolint:errcheck // checked above
	rl.cfg = cfg
	rl.log.Info("quota coordinator: config reloaded", "config", rl.path, "tokens_changed", ch.Principals,
		"certificates_read", rl.certs != nil, "changed_not_applied", ch.NotApplied)
	if len(ch.NotApplied) > 0 {
		rl.log.Warn("quota coordinator: the reloaded config changes sections that apply only at the next start", "sections", ch.NotApplied)
	}
}
