package eventlog

import (
	"errors"
	"fmt"
	"testing"

	"github.com/afloat/afloat/quota"
)

// TestKinds: every kind reads back from its name; no other name, and no
// kind outside the list, is one — nor exit, Merge's mark, which no log
// may hold.
func TestKinds(t *testing.T) {
	seen := map[string]bool{}
	for k := Start; k <= Summary; k++ {
		name := k.String()
		if seen[name] || name == "" {
			t.Errorf("kind %d: name %q empty or taken", k, name)
		}
		seen[name] = true
		if got, err := ParseKind(name); err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v; want %v", name, got, err, k)
		}
	}
	for _, s := range []string{"", "Admit", "admitted", "check", "Kind(0)", "exit"} {
		if k, err := ParseKind(s); !errors.Is(err, ErrUnknownEvent) {
			t.Errorf("ParseKind(%q) = %v, %v; want %v", s, k, err, ErrUnknownEvent)
		}
	}
	if got := Kind(0).String(); got != "Kind(0)" {
		t.Errorf("Kind(0) = %q", got)
	}
	if got := (exit + 1).String(); got != fmt.Sprintf("Kind(%d)", exit+1) {
		t.Errorf("exit+1 = %q", got)
	}
}

// FuzzParseEvent: no line panics the log reader; what it reads is of a
// kind a component writes (or the summary line), an admission or refusal
// of at least one token; and it writes back to an equal event.
func FuzzParseEvent(f *testing.F) {
	for _, e := range []Event{
		{T: 1, Kind: Admit, Tenant: "t", Region: "eu", N: 5},
		{T: 2, Kind: Lease, Tenant: "t", Region: "eu", ID: 3, Epoch: 1, Rate: quota.Tokens(166.666666), Burst: 2000 * quota.One, Activates: 2, Expires: 10},
		{T: 3, Kind: Traffic, Rates: map[string]float64{"eu": 1.5}},
		{T: 4, Kind: Return, Tenant: "t", Region: "eu", ID: 3, Balance: 12345},
	} {
		f.Add(e.AppendJSON(nil))
	}
	f.Add([]byte(`{"ev":"lease","rate":"x"}`))
	f.Add([]byte(`{"t_ns":1,"ev":"lease","rate":1.1234567}`))
	f.Add([]byte(`{"t_ns":1,"ev":"admitted","tenant":"t","region":"eu","n":5}`))
	f.Add([]byte(`{"t_ns":1,"ev":"admit","tenant":"t","region":"eu","n":-5}`))
	f.Add([]byte(`{"t_ns":1,"EV":"Admit","n":0}`))
	f.Add([]byte(`{"ev":"summary","seed":7,"violations":0}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseEvent(line)
		if err != nil {
			return
		}
		if !e.Kind.valid() {
			t.Fatalf("%q: read an event of kind %v", line, e.Kind)
		}
		if (e.Kind == Admit || e.Kind == Reject) && e.N < 1 {
			t.Fatalf("%q: read an %v of %d tokens", line, e.Kind, e.N)
		}
		back, err := ParseEvent(e.AppendJSON(nil))
		if err != nil {
			t.Fatalf("re-reading %q: %v", e.AppendJSON(nil), err)
		}
		if fmt.Sprint(back) != fmt.Sprint(e) {
			t.Fatalf("round trip: %+v, then %+v", e, back)
		}
	})
}
