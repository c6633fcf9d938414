package web

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStrictNumbersAndNull: where the API wants a number, null and numbers that
// are not whole (1e-400, which a float reads as 0; 1.0000000000000001,
// read as 1) are refused with the field named, as are a zero that is not
// in a field's range and a key given twice — before, "minute": null ran
// at minute 0, "rate": 1e-400 stopped the assignment lab's load, and
// "profile": null ran the default profile.
func TestStrictNumbersAndNull(t *testing.T) {
	h, lab := newHandler(DefaultConfig())
	defer lab.stop()
	for i, tc := range []struct {
		method, target, body, field string
	}{
		{"POST", "/api/run", `{"scenario": "steady", "actions": [{"minute": null, "control": "rollback"}]}`, "actions[0].minute"},
		{"POST", "/api/run", `{"scenario": "steady", "actions": [{"minute": 1e-400, "control": "rollback"}]}`, "actions[0].minute"},
		{"POST", "/api/run", `{"scenario": "steady", "actions": [{"minute": 3, "control": "fleet_floor", "value": 1e-400}]}`, "actions[0].value"},
		{"POST", "/api/run", `{"scenario": "steady", "noise": null}`, "noise"},
		{"POST", "/api/run", `{"scenario": null}`, "scenario"},
		{"POST", "/api/run", `{"scenario": "steady", "actions": null}`, "actions"},
		{"POST", "/api/run", `{"scenario": "steady", "seed": 1e-400}`, "seed"},
		{"POST", "/api/run", `{"scenario": "steady", "seed": 1.0000000000000001}`, "seed"},
		{"POST", "/api/run", `{"scenario": "steady", "minutes": 0}`, "minutes"},
		{"POST", "/api/run", `{"scenario": "steady", "to": 1e-400}`, "to"},
		{"POST", "/api/run", `{"scenario": "steady", "scenario": "surge"}`, "scenario"},
		{"POST", "/api/run", `{"scenario": "steady", "actions": [{"minute": 1, "control": "rollback", "minute": 2}]}`, "actions[0].minute"},
		{"GET", "/api/run?scenario=steady&minutes=0", "", "minutes"},
		{"GET", "/api/run?scenario=steady&to=1e-400", "", "to"},
		{"GET", "/api/explain?scenario=steady&minute=%2B1", "", "minute"},
		{"GET", "/api/debrief?scenario=steady&at=0x10", "", "at"},
		{"POST", "/api/debrief", `{"scenario": "steady", "coach": null}`, "coach"},
		{"POST", "/api/bot", `{"scenario": "steady", "bot": null}`, "bot"},
		{"POST", "/api/assign/pick", `{"n": 1.0000000000000001}`, "n"},
		{"POST", "/api/assign/pick", `{"n": null}`, "n"},
		{"POST", "/api/assign/pick", `{"n": 1, "n": 2}`, "n"},
		{"POST", "/api/assign/load", `{"rate": 1e-400}`, "rate"},
		{"POST", "/api/assign/restore", `{"member": "proxy-01", "policy": null}`, "policy"},
		{"POST", "/api/overload/compare", `{"profile": null}`, "profile"},
		{"POST", "/api/overload/compare", `{"retries": 1e-400}`, "retries"},
		{"POST", "/api/quota/run", `{"actions": null}`, "actions"},
		{"POST", "/api/quota/run", `{"seed": 1e-400}`, "seed"},
		{"POST", "/api/quota/run", `{"actions": [{"at_s": 1e-400, "action": "heal", "region": "eu"}]}`, "actions[0].at_s"},
		{"POST", "/api/quota/run", `{"rate": 500, "rate": 1000}`, "rate"},
	} {
		req := localRequest(tc.method, tc.target, strings.NewReader(tc.body))
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var a struct{ Error, Field string }
		json.Unmarshal(rec.Body.Bytes(), &a)
		if rec.Code != 400 || a.Field != tc.field {
			t.Errorf("step %d: %s %s %s = %d %q %q; want 400 naming %q", i, tc.method, tc.target, tc.body, rec.Code, a.Field, a.Error, tc.field)
		}
	}
}
