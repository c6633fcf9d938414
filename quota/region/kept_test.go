package region

import (
	"testing"
	"time"

	"github.com/afloat/afloat/quota"
)

// TestKeptAnswers: an Unchanged answer for the lease in use answers the
// request and keeps the lease as it is — its balance and its end, which
// stays measured from the request that got it; the ordinary renewal stays
// half a lease after that request. One for another lease is ignored.
func TestKeptAnswers(t *testing.T) {
	l := newLimiter(t)
	in := grantAt(t, l, 0, 10*ms, 100, 100, nil)
	if !in.OK() {
		t.Fatal(in.Outcome)
	}
	lease := in.Lease
	before := l.Status(2*sec, "acme")
	// Asked again at 2 s (nudged, say); answered Unchanged.
	req, _ := l.Request(2*sec, "acme")
	g := quota.Grant{Lease: lease, Seq: req.Seq, ValidFor: 10 * time.Second, Margin: 500 * time.Millisecond, Unchanged: true}
	kept := l.Install(2*sec+10*ms, g)
	if kept.Outcome != Kept || kept.Until != in.Until {
		t.Fatalf("Install(Unchanged) = %v until %v, want Kept until %v", kept.Outcome, time.Duration(kept.Until), time.Duration(in.Until))
	}
	after := l.Status(2*sec+10*ms, "acme")
	if after.Lease.ID != lease.ID || after.Balance < before.Balance {
		t.Fatalf("after Kept: lease %d balance %v; before: lease %d balance %v", after.Lease.ID, after.Balance, before.Lease.ID, before.Balance)
	}
	for i, s := range []struct {
		at   int64
		want bool
	}{
		{3 * sec, false},    // answered, and not half a lease yet
		{5*sec - ms, false}, // just before half the lease from the request that got it (0)
		{5 * sec, true},     // half the lease: not 7 s, half a lease after the kept request
	} {
		if got := l.Due(s.at, "acme"); got != s.want {
			t.Errorf("step %d: Due(%v) = %v, want %v", i, time.Duration(s.at), got, s.want)
		}
	}
	// An Unchanged answer for a lease other than the one in use: ignored.
	req, _ = l.Request(5*sec, "acme")
	g = quota.Grant{Lease: quota.Lease{ID: lease.ID - 1, Tenant: "acme", Region: "eu", Epoch: 1}, Seq: req.Seq, ValidFor: 10 * time.Second, Unchanged: true}
	if got := l.Install(5*sec+ms, g).Outcome; got != NotNewer {
		t.Fatalf("Unchanged for another lease: %v, want %v", got, NotNewer)
	}
}

// TestRefusingAsksEarlyOnlyWhenItHelps: a region refusing at its fair
// share (its grant not Short) does not ask again before half a lease;
// one whose grant said Short does, every HotInterval; one whose demand
// doubled does.
func TestRefusingAsksEarlyOnlyWhenItHelps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		short bool
		offer int // tokens offered over the second after the grant; 100 reported before
		want  bool
	}{
		{"at its share", false, 150, false},
		{"short", true, 150, true},
		{"demand doubled", false, 300, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLimiter(t)
			// First request (demand unknown), then one a second later that
			// reports 100 a second offered.
			grantAt(t, l, 0, 10*ms, 50, 50, nil)
			admitN(l, sec, 100)
			in := grantAt(t, l, sec, sec+10*ms, 50, 50, func(g *quota.Grant) { g.Short = tc.short })
			if !in.OK() {
				t.Fatal(in.Outcome)
			}
			admitN(l, 2*sec, tc.offer) // more than the bucket holds: refusing
			if got := l.Due(2*sec, "acme"); got != tc.want {
				t.Fatalf("Due a second after the grant, refusing, %d offered: %v, want %v", tc.offer, got, tc.want)
			}
		})
	}
}
