package remote_test

import (
	"strings"
	"testing"
)

// TestHandlerRefusesAmbiguousBodies: a renewal or return body with a key
// given twice (encoding/json kept the last: a body could say one region
// to a front that reads the first and spend as another), a key in another
// case, null, or a fraction in an integer is refused with 400 naming the
// member, and grants nothing.
func TestHandlerRefusesAmbiguousBodies(t *testing.T) {
	hs, srv, _ := served(t)
	for i, c := range []struct{ path, body, want string }{
		{"/v1/renew", `{"requests":[{"tenant":"acme","region":"eu","seq":1,"seq":2}]}`, `requests[0].seq: key "seq" given more than once`},
		{"/v1/renew", `{"requests":[{"tenant":"acme","region":"eu","seq":1}],"requests":[]}`, `requests: key "requests" given more than once`},
		{"/v1/renew", `{"requests":[{"tenant":"acme","Tenant":"x","region":"eu","seq":1}]}`, `requests[0].Tenant: unknown field (names are case-sensitive`},
		{"/v1/renew", `{"requests":[{"tenant":"acme","region":"eu","seq":null}]}`, `requests[0].seq: null`},
		{"/v1/renew", `{"requests":null}`, `requests: null`},
		{"/v1/renew", `{"requests":[{"tenant":"acme","region":"eu","seq":1,"demand":1e-400}]}`, `requests[0].demand: number 1e-400`},
		{"/v1/renew", `{"requests":[{"tenant":"acme","region":"eu","seq":1.5}]}`, `requests[0].seq: number 1.5`},
		{"/v1/return", `{"returns":[{"tenant":"acme","region":"eu","lease_id":1,"lease_id":2}]}`, `returns[0].lease_id: key "lease_id" given more than once`},
	} {
		resp, body := post(t, hs.URL+c.path, tokens["eu"], c.body)
		if resp.StatusCode != 400 || !strings.Contains(body, strings.ReplaceAll(c.want, `"`, `\"`)) {
			t.Errorf("step %d: %s: %d %s; want 400 naming %s", i, c.body, resp.StatusCode, body, c.want)
		}
	}
	if live := srv.Live("acme"); len(live) != 0 {
		t.Fatalf("refused bodies granted %d leases", len(live))
	}
}
