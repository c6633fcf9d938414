package agent

import (
	"context"
	"fmt"

	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/internal/ops"
	"github.com/afloat/afloat/quota/remote"
)

// reloads reads the config file again each time Options.Reload asks,
// until ctx ends.
func (a *Agent) reloads(ctx context.Context, client *remote.Client) {
	cfg := a.o.Config // the config in use; this goroutine's alone
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.o.Reload:
		}
		next, err := a.reload(cfg, client)
		if err != nil {
			a.o.Logger.Error("quota region: config not reloaded; the one in use stays", "config", a.o.ConfigFile, "err", err)
			continue
		}
		cfg = next
	}
}

// reload applies what of the file a running agent can: the region's
// token and the listeners' certificates. It checks before it applies,
// so that a refusal changes nothing; neither its log nor its errors hold
// a token.
func (a *Agent) reload(old *config.Config, client *remote.Client) (*config.Config, error) {
	o := &a.o
	cfg, ch, err := ops.ReloadConfig(o.ConfigFile, old)
	if err != nil {
		return nil, err
	}
	tok := cfg.Regions[o.Name].Token
	if tok == "" && o.ClientCert == "" {
		return nil, fmt.Errorf("regions.%s has no token: give the region's client certificate (--client-cert, --client-key) or a token", o.Name)
	}
	if o.certs != nil {
		if err := o.certs.Reload(); err != nil {
			return nil, err
		}
	}
	changed := tok != old.Regions[o.Name].Token
	if changed {
		if err := client.SetToken(tok); err != nil {
			return nil, err
		}
	}
	o.Logger.Info("quota region: config reloaded", "config", o.ConfigFile, "region", o.Name, "token_changed", changed,
		"certificates_read", o.certs != nil)
	if len(ch.NotApplied) > 0 {
		o.Logger.Warn("quota region: the reloaded config changes sections that apply only at the next start", "sections", ch.NotApplied)
	}
	return cfg, nil
}
