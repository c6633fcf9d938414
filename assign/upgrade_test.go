package assign

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// oldLayout writes the keys of a pool as afloat wrote them before meta's
// 'due' and 'm|' fields: a weight in 'w|'..m, a limit in 'l|'..m, 'next'
// while a member is out (or none, as before 'next' existed).
func oldLayout(t *testing.T, c rueidis.Client, p *Pool, t0 int64, withNext bool) {
	t.Helper()
	ctx := ctxFor(t)
	meta := []string{
		"w|a", "2", // a: weight 2, count 3
		"w|e", "3", "l|e", "2 4 500 1000", // e: weight 3, count 6, 500 a second in bursts of 4
		"l|c", "1 5 1000 1000", // c: 1,000 a second in bursts of 5
		"t|c", strconv.FormatInt(t0-3, 10),
		"p|d", "4", // d: count 4, cooling
		"table", "afloat keeps this hash a hash table, not a listpack: no scan per lookup",
	}
	if withNext {
		meta = append(meta, "next", strconv.FormatInt(t0+100, 10))
	}
	cmds := rueidis.Commands{
		c.B().Del().Key(p.k.Active, p.k.Cooling, p.k.Meta).Build(),
		c.B().Zadd().Key(p.k.Active).ScoreMember().ScoreMember(1.5, "a").ScoreMember(2, "b").
			ScoreMember(1, "c").ScoreMember(2, "e").Build(),
		c.B().Zadd().Key(p.k.Cooling).ScoreMember().ScoreMember(float64(t0+100), "d").Build(),
	}
	hset := c.B().Hset().Key(p.k.Meta).FieldValue()
	for i := 0; i < len(meta); i += 2 {
		hset = hset.FieldValue(meta[i], meta[i+1])
	}
	cmds = append(cmds, hset.Build())
	for _, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
}

// A pool written by an older afloat (weights and limits in fields of
// their own, 'next' only while a member is out, or no 'next') keeps
// working: the client converts it before its first script (lua.Upgrade),
// and it then answers every pick and its status as a pool made today in
// the same state does; a pool that turns old again under a handle that
// converted it (a restart from an older snapshot) is converted again
// after the server reports its scripts lost, and its sorted set made a
// skiplist again.
func TestUpgradeFromOldLayout(t *testing.T) {
	_, c := newClient(t)
	ctx := ctxFor(t)
	const t0 = 9_000_000
	for _, withNext := range []bool{true, false} {
		name := fmt.Sprintf("next-%v", withNext)
		old, setOld := testClockPool(t, c, "old-"+name, t0)
		oldLayout(t, c, old, t0, withNext)

		twin, setTwin := testClockPool(t, c, "twin-"+name, t0)
		steps := []error{
			func() error { _, err := twin.AddWeighted(ctx, 2, 3, "a"); return err }(),
			func() error { _, err := twin.Add(ctx, 2, "b"); return err }(),
			func() error { _, err := twin.Add(ctx, 1, "c"); return err }(),
			func() error { _, err := twin.Add(ctx, 4, "d"); return err }(),
			func() error { _, err := twin.AddWeighted(ctx, 3, 6, "e"); return err }(),
			twin.SetLimit(ctx, Limit{Rate: 1000, Per: time.Second, Burst: 5}, "c"),
			twin.SetLimit(ctx, Limit{Rate: 500, Per: time.Second, Burst: 4}, "e"),
			twin.cooldownUntil(ctx, "d", time.UnixMilli(t0+100)),
		}
		for i, err := range steps {
			if err != nil {
				t.Fatalf("%s: twin step %d: %v", name, i, err)
			}
		}
		// c's GCRA time as the old pool has it.
		if err := c.Do(ctx, c.B().Hset().Key(twin.k.Meta).FieldValue().FieldValue("t|c", strconv.Itoa(t0-3)).Build()).Error(); err != nil {
			t.Fatal(err)
		}

		same := func(step string) {
			t.Helper()
			a, errA := old.Status(ctx)
			b, errB := twin.Status(ctx)
			if errA != nil || errB != nil {
				t.Fatalf("%s: %s: status: %v, %v", name, step, errA, errB)
			}
			if !reflect.DeepEqual(a.Members, b.Members) {
				t.Fatalf("%s: %s: the old pool's members\n%+v\nwant the twin's\n%+v", name, step, a.Members, b.Members)
			}
		}
		same("before any pick")
		kv, err := c.Do(ctx, c.B().Hgetall().Key(old.k.Meta).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"m|a": "2", "m|e": "3 2 4 500 1000", "m|c": "1 1 5 1000 1000", "due": strconv.Itoa(t0 + 100)}
		for f, v := range want {
			if kv[f] != v {
				t.Errorf("%s: converted meta %q = %q, want %q (meta %v)", name, f, kv[f], v, kv)
			}
		}
		for _, f := range []string{"w|a", "w|e", "l|e", "l|c", "next"} {
			if _, ok := kv[f]; ok {
				t.Errorf("%s: converted meta still has %q (meta %v)", name, f, kv)
			}
		}
		for i := range 40 {
			now := int64(t0 + 10*i)
			setOld(now)
			setTwin(now)
			a, errA := old.Pick(ctx)
			b, errB := twin.Pick(ctx)
			if a != b || fmt.Sprint(errA) != fmt.Sprint(errB) {
				t.Fatalf("%s: step %d: old pool picked %q %v, the twin %q %v", name, i, a, errA, b, errB)
			}
		}
		same("after 40 picks")

		// The pool turns old again (as a restart from an older snapshot
		// would make it) under the handle that converted it; the server
		// lost its scripts, so the handle converts it again.
		oldLayout(t, c, old, t0, withNext)
		if err := c.Do(ctx, c.B().ScriptFlush().Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if _, err := old.Pick(ctx); err != nil {
			t.Fatal(err)
		}
		if v, err := c.Do(ctx, c.B().Hget().Key(old.k.Meta).Field("m|a").Build()).ToString(); err != nil || v != "2" {
			t.Fatalf("%s: after a script flush, m|a = %q %v, want 2", name, v, err)
		}
		// oldLayout made the sorted set anew, a listpack, as a restart
		// loads it: the busy pool's is a skiplist again.
		if enc, err := c.Do(ctx, c.B().ObjectEncoding().Key(old.k.Active).Build()).ToString(); err != nil || enc != "skiplist" {
			t.Fatalf("%s: after a script flush, the sorted set is a %q %v, want a skiplist", name, enc, err)
		}
	}
}
