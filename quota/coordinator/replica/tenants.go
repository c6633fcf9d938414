package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/afloat/afloat/internal/strictjson"
	"github.com/afloat/afloat/quota"
	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/remote"
)

// The tenants API, on the coordinator beside the regions' API: an
// operator's bearer token (Config.Operators) on every route.
//
//	GET  /v1/tenants                 → {"tenants":[TenantView...]}
//	GET  /v1/tenants/{name}          → TenantView
//	POST /v1/tenants/create  TenantSpec (name, rate, burst required)   → TenantView
//	POST /v1/tenants/update  TenantSpec (name; the fields to change)   → TenantView
//	POST /v1/tenants/delete  {"name":N[,"version":V]}                  → {}
//
// POST bodies are application/json, at most MaxTenantBody bytes, unknown
// fields refused. An update or delete carrying "version" applies only if
// the tenant is still at that version (409 otherwise): an edit computed
// from an older read does not undo a change it did not see. A follower
// answers 503 {"error":…,"leader":URL}.

// TenantSpec is a tenant in the API: the config file's fields, in its
// units (tokens, tokens a second, durations as "10s"). In an update, an
// absent field keeps its value.
type TenantSpec struct {
	Name          string           `json:"name"`
	Rate          *float64         `json:"rate,omitempty"`
	Burst         *float64         `json:"burst,omitempty"`
	Mode          *string          `json:"mode,omitempty"`
	Emergency     *float64         `json:"emergency,omitempty"`
	Regions       []string         `json:"regions,omitempty"`
	LeaseDuration *string          `json:"lease_duration,omitempty"`
	SkewMargin    *string          `json:"skew_margin,omitempty"`
	Floor         *float64         `json:"floor,omitempty"`
	Costs         map[string]int64 `json:"costs,omitempty"`
	Version       uint64           `json:"version,omitempty"`
}

// TenantView is a tenant as the API shows it.
type TenantView struct {
	Name          string           `json:"name"`
	Rate          float64          `json:"rate"`
	Burst         float64          `json:"burst"`
	Mode          string           `json:"mode"`
	Emergency     float64          `json:"emergency"`
	Regions       []string         `json:"regions"`
	LeaseDuration string           `json:"lease_duration"`
	SkewMargin    string           `json:"skew_margin"`
	Floor         float64          `json:"floor"`
	Costs         map[string]int64 `json:"costs,omitempty"`
	Version       uint64           `json:"version"`
	By            string           `json:"by"`
}

// MaxTenantBody bounds a tenants API body.
const MaxTenantBody = 64 << 10

// ViewOf shows a tenant record.
func ViewOf(r coordinator.TenantRecord) TenantView {
	return TenantView{Name: r.Name, Rate: r.Rate.Float(), Burst: r.Burst.Float(), Mode: r.Mode.String(),
		Emergency: r.Emergency.Float(), Regions: slices.Clone(r.Regions), LeaseDuration: r.LeaseDuration.String(),
		SkewMargin: r.Margin().String(), Floor: r.FloorShare(), Costs: maps.Clone(r.Costs), Version: r.Version, By: r.By}
}

// DecodeTenantSpec reads a create or update body: one JSON object, no
// unknown field, no key given twice, no null, integers where integers
// are due (internal/strictjson).
func DecodeTenantSpec(body []byte) (TenantSpec, error) {
	var s TenantSpec
	if err := strictjson.Decode(body, &s); err != nil {
		return TenantSpec{}, fmt.Errorf("replica: body: %w", err)
	}
	return s, nil
}

// apply sets the spec's fields on t (the tenant's entry before an update,
// or a zero one for a create), and validates the result with the config
// file's validator.
func apply(c *config.Config, t config.TenantConfig, s TenantSpec) (config.TenantConfig, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{config.ErrInvalidTenant}, args...)...)
	}
	t.Name = s.Name
	if s.Rate != nil {
		t.Rate = *s.Rate
	}
	if s.Burst != nil {
		t.Burst = *s.Burst
	}
	if s.Mode != nil {
		t.Mode = *s.Mode
	}
	if s.Emergency != nil {
		t.Emergency = *s.Emergency
	}
	if s.Regions != nil {
		t.Regions = slices.Clone(s.Regions)
	}
	dur := func(field string, v *string, dst **time.Duration) error {
		if v == nil {
			return nil
		}
		d, err := time.ParseDuration(*v)
		if err != nil {
			return bad("tenant.%s %q: want a duration such as 10s", field, *v)
		}
		*dst = &d
		return nil
	}
	if err := dur("lease_duration", s.LeaseDuration, &t.LeaseDuration); err != nil {
		return config.TenantConfig{}, err
	}
	if err := dur("skew_margin", s.SkewMargin, &t.SkewMargin); err != nil {
		return config.TenantConfig{}, err
	}
	if s.Floor != nil {
		f := *s.Floor
		t.Floor = &f
	}
	if s.Costs != nil {
		t.Costs = maps.Clone(s.Costs)
	}
	if err := c.CheckTenant("tenant", &t); err != nil {
		// The same rules as the file's, but no file is involved: say so.
		msg := strings.TrimPrefix(err.Error(), config.ErrConfigFile.Error()+": ")
		return config.TenantConfig{}, fmt.Errorf("%w: %s", config.ErrInvalidTenant, msg)
	}
	return t, nil
}

// entryOf is a tenant record as a config entry: its optional fields as
// given (a zero in force given as zero), a zero field left out.
func entryOf(r coordinator.TenantRecord) config.TenantConfig {
	t := config.TenantConfig{Name: r.Name, Rate: r.Rate.Float(), Burst: r.Burst.Float(), Mode: r.Mode.String(),
		Emergency: r.Emergency.Float(), Regions: slices.Clone(r.Regions), Costs: maps.Clone(r.Costs)}
	if r.LeaseDuration != 0 {
		d := r.LeaseDuration
		t.LeaseDuration = &d
	}
	if r.SkewMargin != 0 {
		d := r.Margin()
		t.SkewMargin = &d
	}
	if r.Floor != 0 {
		f := r.FloorShare()
		t.Floor = &f
	}
	return t
}

// TenantBackend is what the tenants API serves: a leading
// coordinator.Server.
type TenantBackend interface {
	PutTenant(ctx context.Context, t quota.Tenant, by string, create bool, ifVersion uint64) (coordinator.TenantRecord, error)
	DeleteTenant(ctx context.Context, name, by string, ifVersion uint64) error
	Tenants() []coordinator.TenantRecord
	TenantRecord(name string) (coordinator.TenantRecord, bool)
}

// TenantsHandler serves the tenants API: cfg validates and names the
// operators; lead returns the backend while this process leads, else nil
// and the leader's URL.
// An operator token the config's validation would refuse (cfg not from
// config.LoadConfig or ParseConfig) authenticates no one.
func TenantsHandler(cfg *config.Config, lead func() (TenantBackend, string), log *slog.Logger) http.Handler {
	keys, err := remote.NewKeyring(cfg.OperatorTokens())
	if err != nil {
		keys, _ = remote.NewKeyring(nil) // fail closed
	}
	return tenantsHandler(cfg, keys, lead, log)
}

// tenantsHandler is TenantsHandler with the operators' tokens in keys,
// which a reload changes (reload.go).
func tenantsHandler(cfg *config.Config, keys *remote.Keyring, lead func() (TenantBackend, string), log *slog.Logger) http.Handler {
	h := &tenantsAPI{cfg: cfg, keys: keys, lead: lead, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/tenants", h.list)
	mux.HandleFunc("GET /v1/tenants/{name}", h.get)
	mux.HandleFunc("POST /v1/tenants/create", func(w http.ResponseWriter, r *http.Request) { h.put(w, r, true) })
	mux.HandleFunc("POST /v1/tenants/update", func(w http.ResponseWriter, r *http.Request) { h.put(w, r, false) })
	mux.HandleFunc("POST /v1/tenants/delete", h.del)
	return mux
}

type tenantsAPI struct {
	cfg  *config.Config
	keys *remote.Keyring // the operators' tokens
	lead func() (TenantBackend, string)
	log  *slog.Logger
}

type apiError struct {
	Error  string `json:"error"`
	Leader string `json:"leader,omitempty"`
}

func answer(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client went away
}

// operator authenticates: every operator's token compared in constant
// time, so the time taken shows neither the token nor whose it matched.
func (h *tenantsAPI) operator(r *http.Request) (string, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "", false
	}
	found := h.keys.Match(tok)
	return found, found != ""
}

// begin authenticates, checks leadership and, for a POST, reads the body.
func (h *tenantsAPI) begin(w http.ResponseWriter, r *http.Request, post bool) (string, TenantBackend, []byte, bool) {
	who, ok := h.operator(r)
	if !ok {
		if h.log != nil {
			h.log.Warn("quota coordinator: refused a tenants request without a valid operator token",
				"remote", r.RemoteAddr, "path", r.URL.Path, "authorization", presence(r.Header.Get("Authorization")))
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="afloat-quota-operators"`)
		answer(w, http.StatusUnauthorized, apiError{Error: "replica: a valid operator token is required (Authorization: Bearer TOKEN)"})
		return "", nil, nil, false
	}
	b, leader := h.lead()
	if b == nil {
		answer(w, http.StatusServiceUnavailable, apiError{Error: "replica: this coordinator is not the leader", Leader: leader})
		return "", nil, nil, false
	}
	if !post {
		return who, b, nil, true
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		answer(w, http.StatusUnsupportedMediaType, apiError{Error: fmt.Sprintf("replica: Content-Type %q: want application/json", ct)})
		return "", nil, nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxTenantBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			answer(w, http.StatusRequestEntityTooLarge, apiError{Error: fmt.Sprintf("replica: body over %d bytes", MaxTenantBody)})
		} else {
			answer(w, http.StatusBadRequest, apiError{Error: "replica: reading the body: " + err.Error()})
		}
		return "", nil, nil, false
	}
	return who, b, body, true
}

func presence(s string) string {
	if s == "" {
		return "missing"
	}
	return "wrong"
}

// codeOf maps an error of a tenant operation to its status.
func codeOf(err error) int {
	switch {
	case errors.Is(err, quota.ErrUnknownTenant):
		return http.StatusNotFound
	case errors.Is(err, coordinator.ErrTenantExists), errors.Is(err, coordinator.ErrVersionMismatch):
		return http.StatusConflict
	case errors.Is(err, config.ErrInvalidTenant), errors.Is(err, config.ErrConfigFile), errors.Is(err, quota.ErrConfig):
		return http.StatusUnprocessableEntity
	}
	return http.StatusServiceUnavailable
}

func (h *tenantsAPI) list(w http.ResponseWriter, r *http.Request) {
	_, b, _, ok := h.begin(w, r, false)
	if !ok {
		return
	}
	out := struct {
		Tenants []TenantView `json:"tenants"`
	}{Tenants: []TenantView{}}
	for _, rec := range b.Tenants() {
		out.Tenants = append(out.Tenants, ViewOf(rec))
	}
	answer(w, http.StatusOK, out)
}

func (h *tenantsAPI) get(w http.ResponseWriter, r *http.Request) {
	_, b, _, ok := h.begin(w, r, false)
	if !ok {
		return
	}
	name := r.PathValue("name")
	rec, found := b.TenantRecord(name)
	if !found {
		answer(w, http.StatusNotFound, apiError{Error: fmt.Sprintf("replica: %v: %q", quota.ErrUnknownTenant, name)})
		return
	}
	answer(w, http.StatusOK, ViewOf(rec))
}

func (h *tenantsAPI) put(w http.ResponseWriter, r *http.Request, create bool) {
	who, b, body, ok := h.begin(w, r, true)
	if !ok {
		return
	}
	spec, err := DecodeTenantSpec(body)
	if err != nil {
		answer(w, http.StatusBadRequest, apiError{Error: err.Error()})
		return
	}
	var base config.TenantConfig
	var old coordinator.TenantRecord
	if !create {
		var found bool
		if old, found = b.TenantRecord(spec.Name); !found {
			answer(w, http.StatusNotFound, apiError{Error: fmt.Sprintf("replica: %v: %q", quota.ErrUnknownTenant, spec.Name)})
			return
		}
		base = entryOf(old)
	} else if spec.Rate == nil || spec.Burst == nil {
		answer(w, http.StatusUnprocessableEntity, apiError{Error: "replica: tenant.rate and tenant.burst are required to create a tenant"})
		return
	}
	tc, err := apply(h.cfg, base, spec)
	if err != nil {
		answer(w, http.StatusUnprocessableEntity, apiError{Error: err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	rec, err := b.PutTenant(ctx, tc.Tenant(), who, create, spec.Version)
	if err != nil {
		h.unconfirmed(err, who, spec.Name)
		answer(w, codeOf(err), apiError{Error: err.Error()})
		return
	}
	if h.log != nil {
		op := "update"
		if create {
			op = "create"
		}
		h.log.Info("quota coordinator: tenant changed", "op", op, "operator", who, "tenant", rec.Name,
			"version", rec.Version, "old", viewOrNil(old), "new", ViewOf(rec))
	}
	answer(w, http.StatusOK, ViewOf(rec))
}

func viewOrNil(r coordinator.TenantRecord) any {
	if r.Name == "" {
		return nil
	}
	return ViewOf(r)
}

func (h *tenantsAPI) del(w http.ResponseWriter, r *http.Request) {
	who, b, body, ok := h.begin(w, r, true)
	if !ok {
		return
	}
	var req struct {
		Name    string `json:"name"`
		Version uint64 `json:"version,omitempty"`
	}
	if err := strictjson.Decode(body, &req); err != nil {
		answer(w, http.StatusBadRequest, apiError{Error: fmt.Sprintf("replica: body: want {\"name\":…}: %v", err)})
		return
	}
	old, _ := b.TenantRecord(req.Name)
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := b.DeleteTenant(ctx, req.Name, who, req.Version); err != nil {
		h.unconfirmed(err, who, req.Name)
		answer(w, codeOf(err), apiError{Error: err.Error()})
		return
	}
	if h.log != nil {
		h.log.Info("quota coordinator: tenant changed", "op", "delete", "operator", who, "tenant", req.Name,
			"version", old.Version+1, "old", viewOrNil(old), "new", nil)
	}
	answer(w, http.StatusOK, struct{}{})
}

// unconfirmed logs a change the coordinator took but the ledger has not
// confirmed: it holds in this coordinator and is written again with the
// next write (its event reaches the event log once written).
func (h *tenantsAPI) unconfirmed(err error, who, tenant string) {
	if h.log != nil && errors.Is(err, coordinator.ErrNotWritten) {
		h.log.Warn("quota coordinator: tenant change taken, not yet confirmed written", "operator", who, "tenant", tenant, "err", err)
	}
}
