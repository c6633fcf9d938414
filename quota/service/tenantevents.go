package service

import (
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/chaos"
	"github.com/afloat/afloat/quota/coordinator"
)

// tenantEvent writes a tenant change to the event log: the configuration
// in force from t (the old one, for a delete), who made it, and the credit
// it dropped (a credit event of minus that many tokens), so that the
// checker follows R and B over the run.
func (l *EventLog) tenantEvent(t int64, ch *coordinator.TenantChange) {
	if l == nil || ch == nil {
		return
	}
	cfg := ch.New
	if ch.Op == "delete" {
		cfg = ch.Old
	}
	l.Write(tenantEventOf(t, ch.Op, ch.By, cfg))
	if ch.Dropped > 0 {
		l.Write(&chaos.Event{T: t, Ev: "credit", Tenant: cfg.Name, Balance: -ch.Dropped, Why: "tenant " + ch.Op})
	}
}

func tenantEventOf(t int64, op, by string, cfg quota.Tenant) *chaos.Event {
	return &chaos.Event{T: t, Ev: "tenant", Tenant: cfg.Name, Rate: cfg.Rate, Burst: cfg.Burst,
		N: int64(len(cfg.Regions)), Balance: cfg.Emergency, Mode: cfg.Mode.String(), Why: op, By: by}
}

// loaded writes what a new leader read from its ledger: a tenant event
// each, so that a log that begins after a change still has the limits.
func (l *EventLog) loaded(t int64, recs []coordinator.TenantRecord) {
	for _, r := range recs {
		l.Write(tenantEventOf(t, "load", r.By, r.Tenant))
	}
}

// withTenantsAPI serves the tenants API beside the regions' API h.
func withTenantsAPI(h http.Handler, cfg *Config, current *atomic.Pointer[coordinator.Server], leader *atomic.Value, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	t := TenantsHandler(cfg, func() (TenantBackend, string) {
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
