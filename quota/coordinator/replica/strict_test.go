package replica

import (
	"strings"
	"testing"

	"github.com/afloat/afloat/quota/internal/opstest"
)

// TestTenantsAPIZeroMeansZero: through the tenants API, "skew_margin":"0s"
// and "floor":0 are no margin and no floor (they were the defaults, 500 ms
// and 1 %), "lease_duration":"0s" is refused (it was the default, 10 s),
// and the decoder refuses a key given twice (the last one won: an
// operator's {"rate":1,…,"rate":1e9} set 1e9), null and 1e-400.
func TestTenantsAPIZeroMeansZero(t *testing.T) {
	ts, _ := tenantsServer(t, true)
	u := ts.URL + "/v1/tenants"
	j := "application/json"
	code, out := opstest.Call(t, "POST", u+"/create", alice, j, `{"name":"z","rate":10,"burst":100,"skew_margin":"0s","floor":0}`)
	if code != 200 || out["skew_margin"] != "0s" || out["floor"].(float64) != 0 {
		t.Fatalf("create with zeros: %d %v; want skew_margin 0s and floor 0", code, out)
	}
	// An update that leaves them out keeps them at zero.
	code, out = opstest.Call(t, "POST", u+"/update", alice, j, `{"name":"z","burst":50}`)
	if code != 200 || out["skew_margin"] != "0s" || out["floor"].(float64) != 0 || out["lease_duration"] != "10s" {
		t.Fatalf("update: %d %v; want the zeros kept", code, out)
	}
	code, out = opstest.Call(t, "POST", u+"/update", alice, j, `{"name":"z","skew_margin":"100ms","floor":0.1}`)
	if code != 200 || out["skew_margin"] != "100ms" || out["floor"].(float64) != 0.1 {
		t.Fatalf("update to non-zero: %d %v", code, out)
	}
	for i, c := range []struct {
		body string
		code int
		want string
	}{
		{`{"name":"z","lease_duration":"0s"}`, 422, "tenant.lease_duration 0s: want 100ms to 1h"},
		{`{"name":"z","skew_margin":"-1ns"}`, 422, "tenant.skew_margin -1ns: want 0"},
		{`{"name":"z","floor":-1}`, 422, "tenant.floor -1: want 0"},
		{`{"name":"z","rate":1,"burst":1,"rate":1e9}`, 400, `rate: key "rate" given more than once`},
		{`{"name":"z","rate":1,"Rate":1e9}`, 400, `Rate: unknown field (names are case-sensitive`},
		{`{"name":"z","rate":null}`, 400, "rate: null"},
		{`{"name":"z","regions":null}`, 400, "regions: null"},
		{`{"name":"z","floor":1e-400}`, 400, "floor: number 1e-400: too small"},
		{`{"name":"z","costs":{"/x":1e-400}}`, 400, "costs./x: number 1e-400"},
		{`{"name":"z","costs":{"/x":2.5}}`, 400, "want an integer"},
		{`{"name":"z","version":1.5}`, 400, "version: number 1.5"},
	} {
		code, out := opstest.Call(t, "POST", u+"/update", alice, j, c.body)
		msg, _ := out["error"].(string)
		if code != c.code || !strings.Contains(msg, c.want) {
			t.Errorf("step %d: %s: %d %q; want %d and %q", i, c.body, code, msg, c.code, c.want)
		}
	}
	code, out = opstest.Call(t, "GET", u+"/z", alice, "", "")
	if code != 200 || out["rate"].(float64) != 10 || out["burst"].(float64) != 50 || out["version"].(float64) != 3 {
		t.Fatalf("after the refusals: %d %v; want rate 10, burst 50, version 3: nothing applied", code, out)
	}
	code, out = opstest.Call(t, "POST", u+"/delete", alice, j, `{"name":"acme","name":"z"}`)
	if msg, _ := out["error"].(string); code != 400 || !strings.Contains(msg, "given more than once") {
		t.Fatalf("delete naming two tenants: %d %v, want 400", code, out)
	}
}
