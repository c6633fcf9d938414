package eventlog

import (
	"strings"
	"testing"

	"github.com/afloat/afloat/quota"
)

// TestCoveredLeases: a covered lease (not written; its cover's ledger
// record stands for it) counts while its cover does — across a restart
// that restored the cover, even when a coordinator that did not know it
// was fenced granted it — and ends with its cover. Each way to get it
// wrong is a violation: a cover never granted or of another region, a
// covered lease larger than its cover, spending under a covered lease
// after its cover ended or under a stale grant whose cover the successor
// did not restore, and any grant — written or covered — of an epoch older
// than one that has taken over or granted already: a write is fenced,
// and a coordinator answers without one only under a proof that it still
// leads.
func TestCoveredLeases(t *testing.T) {
	start := Event{Kind: Start, Tenant: "t", Rate: 10 * quota.One, Burst: 10 * quota.One, N: 2, Why: "hard"}
	lease := func(at int64, id, epoch uint64, region string, rate float64, cover uint64) Event {
		return Event{T: at, Kind: Lease, Tenant: "t", Region: region, ID: id, Epoch: epoch, Cover: cover,
			Rate: quota.Tokens(rate), Burst: quota.Tokens(rate), Activates: at, Expires: at + int64(s)}
	}
	install := func(at int64, id uint64, region string) Event {
		return Event{T: at, Kind: Install, Tenant: "t", Region: region, ID: id}
	}
	admit := func(at int64, region string) Event {
		return Event{T: at, Kind: Admit, Tenant: "t", Region: region, N: 1}
	}
	restart := func(at int64, epoch uint64, live ...uint64) Event {
		if live == nil {
			live = []uint64{}
		}
		return Event{T: at, Kind: Restart, Epoch: epoch, Live: &live}
	}
	run := func(events ...Event) Report {
		c := NewChecker()
		c.Write(&start)
		for _, e := range events {
			// Through the log's own encoding, as afloat quota check reads it.
			got, err := ParseEvent(e.AppendJSON(nil))
			if err != nil {
				t.Fatal(err)
			}
			c.Write(&got)
		}
		return c.Finish(int64(10 * s))
	}
	ms := int64(s / 1000)
	stop := func(kind Kind, at int64, id uint64) Event {
		return Event{T: at, Kind: kind, Tenant: "t", Region: "a", ID: id}
	}
	// Lease 1 (a, 6) written; 2 and 3 covered by it, each installed in
	// turn. b holds 4 for the whole run: 10 in all.
	b := lease(0, 9, 1, "b", 4, 0)
	b.Expires = int64(10 * s)
	base := []Event{lease(0, 1, 1, "a", 6, 0), b, install(ms, 1, "a"),
		lease(500*ms, 2, 1, "a", 6, 1), stop(Supersede, 510*ms, 1), install(510*ms, 2, "a"), admit(600*ms, "a"),
		lease(900*ms, 3, 1, "a", 6, 1), stop(Supersede, 910*ms, 2), install(910*ms, 3, "a"), admit(1000*ms, "a")}
	with := func(more ...Event) []Event { return append(append([]Event{}, base...), more...) }
	for _, tc := range []struct {
		name   string
		events []Event
		want   string // "" for no violation
	}{
		{"covered renewals", with(admit(1500*ms, "a"), stop(Expire, 1850*ms, 3)), ""},
		{"restart restoring the cover", with(restart(1100*ms, 2, 1, 9), admit(1200*ms, "a"), stop(Expire, 1850*ms, 3)), ""},
		{"stale covered grant, cover restored", with(restart(1100*ms, 2, 1, 9), lease(1200*ms, 4, 1, "a", 6, 1),
			stop(Supersede, 1210*ms, 3), install(1210*ms, 4, "a"), admit(1300*ms, "a"), stop(Expire, 2100*ms, 4)), "after epoch 2 took over"},
		{"restart without the cover", with(restart(1100*ms, 2, 9), admit(1200*ms, "a"), stop(Expire, 1850*ms, 3)), "spent under lease 3"},
		{"stale covered grant, cover not restored, never installed", with(restart(1100*ms, 2, 9), stop(Supersede, 1100*ms, 3), lease(1200*ms, 4, 1, "a", 6, 1)), "after epoch 2 took over"},
		{"stale covered grant, cover not restored, spent", with(restart(1100*ms, 2, 9), stop(Supersede, 1100*ms, 3), lease(1200*ms, 4, 1, "a", 6, 1),
			install(1210*ms, 4, "a"), stop(Expire, 2100*ms, 4)), "spent under lease 4"},
		{"stale written grant", with(restart(1100*ms, 2, 1, 9), lease(1200*ms, 4, 1, "a", 6, 0)), "after epoch 2 fenced"},
		{"stale covered grant after the successor granted", with(restart(1100*ms, 2, 1, 9), lease(1150*ms, 10, 2, "b", 4, 0),
			lease(1200*ms, 4, 1, "a", 6, 1)), "after epoch 2 took over"},
		{"stale grant after a successor granted, its restart not logged", with(lease(1150*ms, 10, 2, "b", 4, 0),
			lease(1200*ms, 4, 1, "a", 6, 1)), "after epoch 2 granted its first lease"},
		{"spent after the cover ended", with(Event{T: 1200 * ms, Kind: End, ID: 1}, admit(1300*ms, "a"), stop(Expire, 1850*ms, 3)), "spent under lease 3"},
		{"granted after the cover ended, spent", with(stop(Supersede, 1100*ms, 3), Event{T: 1200 * ms, Kind: End, ID: 1},
			lease(1300*ms, 4, 1, "a", 6, 1), install(1310*ms, 4, "a"), stop(Expire, 2100*ms, 4)), "spent under lease 4"},
		{"cover never granted", with(lease(1200*ms, 4, 1, "a", 6, 77)), "covered by lease 77, which was never granted"},
		{"cover of another region", with(lease(1200*ms, 4, 1, "a", 4, 9)), "not a written lease of the same region"},
		{"cover itself covered", with(lease(1200*ms, 4, 1, "a", 6, 3)), "not a written lease of the same region"},
		{"larger than its cover", with(lease(1200*ms, 4, 1, "a", 7, 1)), "is more than its cover"},
	} {
		rep := run(tc.events...)
		msgs := strings.Join(rep.Messages, "\n")
		switch {
		case tc.want == "" && rep.Violations != 0:
			t.Errorf("%s: %q, want no violation", tc.name, rep.Messages)
		case tc.want != "" && !strings.Contains(msgs, tc.want):
			t.Errorf("%s: %q, want a violation mentioning %q", tc.name, rep.Messages, tc.want)
		}
	}
}
