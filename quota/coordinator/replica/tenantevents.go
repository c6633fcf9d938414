package replica

import (
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/eventlog"
	"github.com/afloat/afloat/quota/remote"
)

// writeLoaded writes what a new leader read from its ledger: a tenant
// event each, so that a log that begins after a change still has the
// limits.
func writeLoaded(l *eventlog.File, at int64, recs []coordinator.TenantRecord) {
	for _, r := range recs {
		e := eventlog.TenantEvent(at, "load", r.By, r.Tenant)
		l.Write(&e)
	}
}

// withTenantsAPI serves the tenants API beside the regions' API h.
func withTenantsAPI(h http.Handler, cfg *config.Config, operators *remote.Keyring, current *atomic.Pointer[coordinator.Server], leader *atomic.Value, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	t := tenantsHandler(cfg, operators, func() (TenantBackend, string) {
		if s := current.Load(); s != nil {
			return s, ""
		}
		l, _ := leader.Load().(string)
		return nil, l
	}, log)
	mux.Handle("/v1/tenants", t)
	mux.Handle("/v1/tenants/", t)
	mux.Handle("/", h)
	return mux
}
