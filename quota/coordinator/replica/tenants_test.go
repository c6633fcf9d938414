package replica

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/afloat/afloat/quota/config"
	"github.com/afloat/afloat/quota/coordinator"
	"github.com/afloat/afloat/quota/internal/opstest"
)

func tenantsServer(t *testing.T, leading bool) (*httptest.Server, *bytes.Buffer) {
	t.Helper()
	cfg, err := config.ParseConfig([]byte(opstest.ConfigFile("operators.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := coordinator.NewServer(ctx, coordinator.Config{Tenants: cfg.QuotaTenants()}, coordinator.NewMemLedger())
	if err != nil {
		t.Fatal(err)
	}
	go srv.Run(ctx) //nolint:errcheck
	var logs bytes.Buffer
	h := TenantsHandler(cfg, func() (TenantBackend, string) {
		if leading {
			return srv, ""
		}
		return nil, "http://leader.example:7070"
	}, slog.New(slog.NewJSONHandler(&logs, nil)))
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts, &logs
}

const alice = "alice-token-0123456789"

func TestTenantsAPI(t *testing.T) {
	ts, logs := tenantsServer(t, true)
	u := ts.URL + "/v1/tenants"
	j := "application/json"
	code, out := opstest.Call(t, "POST", u+"/create", alice, j, `{"name":"beta","rate":10,"burst":100,"regions":["eu"]}`)
	if code != 200 || out["version"].(float64) != 1 || out["by"] != "alice" {
		t.Fatalf("create: %d %v", code, out)
	}
	code, out = opstest.Call(t, "POST", u+"/update", alice, j, `{"name":"beta","burst":50,"version":1}`)
	if code != 200 || out["burst"].(float64) != 50 || out["rate"].(float64) != 10 || out["version"].(float64) != 2 {
		t.Fatalf("update: %d %v", code, out)
	}
	code, out = opstest.Call(t, "GET", u+"/beta", alice, "", "")
	if code != 200 || out["burst"].(float64) != 50 {
		t.Fatalf("get: %d %v", code, out)
	}
	code, out = opstest.Call(t, "GET", u, alice, "", "")
	if code != 200 || len(out["tenants"].([]any)) != 2 {
		t.Fatalf("list: %d %v", code, out)
	}
	for _, c := range []struct {
		name, method, path, token, ctype, body string
		code                                   int
		want                                   string
	}{
		{"no token", "GET", "", "", "", "", 401, "operator token"},
		{"wrong token", "POST", "/create", "alice-token-0123456780", j, `{}`, 401, "operator token"},
		{"region token", "GET", "", "eu-token-0123456789abcdef", "", "", 401, "operator token"},
		{"content type", "POST", "/create", alice, "text/plain", `{}`, 415, "want application/json"},
		{"content type with charset", "POST", "/create", alice, "application/json; charset=utf-8", `{}`, 415, "want application/json"},
		{"bad JSON", "POST", "/create", alice, j, `{"name":`, 400, "body"},
		{"unknown field", "POST", "/create", alice, j, `{"name":"x","rate":1,"burst":1,"colour":"red"}`, 400, "colour"},
		{"two values", "POST", "/create", alice, j, `{"name":"x"} {}`, 400, "data after the value"},
		{"too big", "POST", "/create", alice, j, `{"name":"` + strings.Repeat("x", MaxTenantBody) + `"}`, 413, "body over"},
		{"GET on a POST route", "GET", "/create", alice, "", "", 404, ""},
		{"POST on list", "POST", "", alice, j, `{}`, 405, ""},
		{"rate missing", "POST", "/create", alice, j, `{"name":"x","burst":1}`, 422, "tenant.rate and tenant.burst"},
		{"rate 0", "POST", "/create", alice, j, `{"name":"x","rate":0,"burst":1}`, 422, "tenant.rate 0: want above 0"},
		{"rate negative", "POST", "/update", alice, j, `{"name":"beta","rate":-1}`, 422, "tenant.rate -1"},
		{"burst negative", "POST", "/update", alice, j, `{"name":"beta","burst":-1}`, 422, "tenant.burst -1"},
		{"mode", "POST", "/update", alice, j, `{"name":"beta","mode":"soft"}`, 422, `tenant.mode "soft": want hard or best-effort`},
		{"emergency in hard mode", "POST", "/update", alice, j, `{"name":"beta","emergency":5}`, 422, "emergency allowance"},
		{"emergency negative", "POST", "/update", alice, j, `{"name":"beta","mode":"best-effort","emergency":-5}`, 422, "tenant.emergency -5"},
		{"unknown region", "POST", "/update", alice, j, `{"name":"beta","regions":["mars"]}`, 422, `tenant.regions[0] "mars": not in regions`},
		{"lease too short", "POST", "/update", alice, j, `{"name":"beta","lease_duration":"1ms"}`, 422, "lease duration 1ms: want 100ms to 1h"},
		{"lease syntax", "POST", "/update", alice, j, `{"name":"beta","lease_duration":"soon"}`, 422, `tenant.lease_duration "soon"`},
		{"name syntax", "POST", "/create", alice, j, `{"name":"a/b","rate":1,"burst":1}`, 422, `tenant.name "a/b"`},
		{"name empty", "POST", "/create", alice, j, `{"name":"","rate":1,"burst":1}`, 422, `tenant.name ""`},
		{"duplicate create", "POST", "/create", alice, j, `{"name":"beta","rate":1,"burst":1}`, 409, "exists"},
		{"stale version", "POST", "/update", alice, j, `{"name":"beta","rate":2,"version":1}`, 409, "version 2, not 1"},
		{"unknown tenant update", "POST", "/update", alice, j, `{"name":"nobody","rate":2}`, 404, "unknown tenant"},
		{"unknown tenant get", "GET", "/nobody", alice, "", "", 404, "unknown tenant"},
		{"unknown tenant delete", "POST", "/delete", alice, j, `{"name":"nobody"}`, 404, "unknown tenant"},
		{"delete bad body", "POST", "/delete", alice, j, `{"name":"beta","force":true}`, 400, "body"},
	} {
		code, out := opstest.Call(t, c.method, u+c.path, c.token, c.ctype, c.body)
		msg, _ := out["error"].(string)
		if code != c.code || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %q, want %d and %q", c.name, code, msg, c.code, c.want)
		}
	}
	code, _ = opstest.Call(t, "POST", u+"/delete", alice, j, `{"name":"beta","version":2}`)
	if code != 200 {
		t.Fatalf("delete: %d", code)
	}
	if code, _ = opstest.Call(t, "GET", u+"/beta", alice, "", ""); code != 404 {
		t.Fatalf("get after delete: %d", code)
	}
	l := logs.String()
	if strings.Contains(l, alice) {
		t.Fatal("the operator's token is in the log")
	}
	for _, want := range []string{`"op":"create"`, `"op":"update"`, `"op":"delete"`, `"operator":"alice"`, `"tenant":"beta"`, `"old":{`, `"burst":50`} {
		if !strings.Contains(l, want) {
			t.Errorf("audit log lacks %s:\n%s", want, l)
		}
	}
}

func TestTenantsAPIFollower(t *testing.T) {
	ts, _ := tenantsServer(t, false)
	code, out := opstest.Call(t, "POST", ts.URL+"/v1/tenants/create", alice, "application/json", `{"name":"x","rate":1,"burst":1}`)
	if code != 503 || out["leader"] != "http://leader.example:7070" {
		t.Fatalf("follower: %d %v", code, out)
	}
	if code, _ := opstest.Call(t, "GET", ts.URL+"/v1/tenants", "", "", ""); code != 401 {
		t.Fatalf("follower without a token: %d, want 401 before anything else", code)
	}
}

func FuzzDecodeTenantSpec(f *testing.F) {
	f.Add([]byte(`{"name":"beta","rate":10,"burst":100,"regions":["eu"],"lease_duration":"2s"}`))
	f.Add([]byte(`{"name":"beta","mode":"best-effort","emergency":5,"version":3}`))
	f.Add([]byte(`{"name":`))
	cfg, err := config.ParseConfig([]byte(opstest.ConfigFile("operators.yaml")))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := DecodeTenantSpec(body)
		if err != nil {
			return
		}
		tc, err := apply(cfg, config.TenantConfig{}, s)
		if err != nil {
			return
		}
		if err := tc.Tenant().Validate(); err != nil {
			t.Fatalf("Apply passed %+v, which the quota refuses: %v", tc, err)
		}
	})
}
