package remote

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/afloat/afloat/quota"
)

// OperatorConfig configures an Operator.
type OperatorConfig struct {
	// Endpoints are the coordinators' base URLs (http://host:port); at
	// least one. The operator's token goes to these only.
	Endpoints []string
	// Token is the operator's bearer token (the config's operators).
	Token string
	// TLS, if not nil, is the TLS config of the default HTTP client: the
	// coordinators' CA (RootCAs; nil: the system's roots). With it, an
	// endpoint given as host:port is https://host:port and an http://
	// one is refused, as ClientConfig's are.
	TLS *tls.Config
	// HTTP is the HTTP client; default one with a 10 s timeout (and TLS).
	HTTP *http.Client
}

// MaxOperatorAnswer bounds an answer of the tenants API an Operator reads.
const MaxOperatorAnswer = 16 << 20

// Operator is an operator's side of the tenants API, which coordinators
// serve beside the regions' API (docs/quota/operations.md, "Tenants"):
//
//	GET  /v1/tenants, GET /v1/tenants/{name}
//	POST /v1/tenants/create, /v1/tenants/update, /v1/tenants/delete
//
// It follows the leader among its endpoints as Client does. Each method
// returns the leader's answer, a JSON document, as it came; a refusal is
// an error that carries the status and the coordinator's message. It is
// safe for concurrent use.
type Operator struct {
	l leaders
}

// NewOperator checks the configuration and returns an operator's client.
func NewOperator(cfg OperatorConfig) (*Operator, error) {
	endpoints, err := checkEndpoints(cfg.Endpoints, cfg.TLS != nil)
	if err != nil {
		return nil, err
	}
	if cfg.Token == "" {
		return nil, fmt.Errorf("%w: remote: an operator's token is required", quota.ErrConfig)
	}
	if cfg.HTTP == nil {
		cfg.HTTP = httpClient(10*time.Second, cfg.TLS)
	}
	o := &Operator{}
	o.l.endpoints, o.l.http, o.l.limit = endpoints, cfg.HTTP, MaxOperatorAnswer
	o.l.token.Store(&cfg.Token)
	return o, nil
}

// List returns every tenant: {"tenants":[...]}.
func (o *Operator) List(ctx context.Context) ([]byte, error) {
	return o.send(ctx, http.MethodGet, "/v1/tenants", nil)
}

// Get returns the tenant name.
func (o *Operator) Get(ctx context.Context, name string) ([]byte, error) {
	return o.send(ctx, http.MethodGet, "/v1/tenants/"+url.PathEscape(name), nil)
}

// Create creates a tenant from spec, the body of POST /v1/tenants/create
// (a JSON object with the config file's fields: name, rate and burst
// required), and returns it as the coordinator stored it.
func (o *Operator) Create(ctx context.Context, spec any) ([]byte, error) {
	return o.send(ctx, http.MethodPost, "/v1/tenants/create", spec)
}

// Update changes the fields spec gives (the name, and a version to apply
// only at that version) and returns the tenant as it is now.
func (o *Operator) Update(ctx context.Context, spec any) ([]byte, error) {
	return o.send(ctx, http.MethodPost, "/v1/tenants/update", spec)
}

// Delete deletes the tenant name; with a version other than 0, only while
// the tenant is still at that version.
func (o *Operator) Delete(ctx context.Context, name string, version uint64) ([]byte, error) {
	return o.send(ctx, http.MethodPost, "/v1/tenants/delete", struct {
		Name    string `json:"name"`
		Version uint64 `json:"version,omitempty"`
	}{name, version})
}

func (o *Operator) send(ctx context.Context, method, path string, body any) ([]byte, error) {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("remote: %s: %w", path, err)
		}
	}
	var out []byte
	_, err := o.l.do(ctx, method, path, data, func(raw []byte) error {
		out = raw
		return nil
	})
	return out, err
}
