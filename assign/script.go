package assign

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/afloat/afloat/assign/internal/lua"
)

// Scripts run by their SHA-1 (EVALSHA), so that a pick sends 40 bytes
// instead of the script. Nothing is loaded ahead: the first EVALSHA on a
// server that lacks the script gets NOSCRIPT, and the fallback's EVAL both
// runs it and puts it in the server's cache. EVAL is routed by its keys, so
// the fallback works on Redis Cluster too, where SCRIPT LOAD would go to a
// random node.

func isNoScript(err error) bool {
	re, ok := err.(replyError)
	return ok && strings.HasPrefix(string(re), "NOSCRIPT")
}

// runner runs scripts with the NOSCRIPT fallback and counts the fallbacks.
// A pool's runner also brings the pool to the scripts' layout of meta
// (lua.Upgrade) before its first script, and again after the server lost
// its scripts (a restart may have loaded an older snapshot): a plain
// pool's pick cannot tell a pool written by an older afloat from one with
// no meta at all, and a pick on a pool it takes for plain would count its
// weighted members wrongly and skip its limits.
type runner struct {
	c       conn
	reloads atomic.Int64

	// upgrade is the pool's keys for lua.Upgrade, nil for a runner of no
	// pool (Leases); upgraded is set once it ran.
	upgrade  []string
	upgraded atomic.Bool
}

// ready runs lua.Upgrade if it has not run since the runner started or
// the server last lost its scripts: nil, or the result of a failed run.
func (r *runner) ready(ctx context.Context) *reply {
	if r.upgrade == nil || r.upgraded.Load() {
		return nil
	}
	res := r.do(ctx, &call{s: lua.Upgrade, keys: r.upgrade})
	if res.Error() == nil {
		r.upgraded.Store(true)
		return nil
	}
	return &res
}

// run runs s by SHA and, if the server has lost its script cache (a
// restart, a failover, SCRIPT FLUSH), once more with the source. NOSCRIPT
// is a refusal before the script ran, so the retry cannot count twice.
func (r *runner) run(ctx context.Context, s *lua.Script, keys, args []string) reply {
	return r.runCall(ctx, &call{s: s, keys: keys, args: args})
}

// runCall is run of a call made (and maybe pinned) by the caller.
func (r *runner) runCall(ctx context.Context, c *call) reply {
	if res := r.ready(ctx); res != nil {
		return *res
	}
	return r.do(ctx, c)
}

func (r *runner) do(ctx context.Context, c *call) reply {
	res := r.c.eval(ctx, c)
	if isNoScript(res.Error()) {
		r.reloads.Add(1)
		if c.s != lua.Upgrade {
			if res := r.lost(ctx); res != nil {
				return *res
			}
		}
		res = r.c.eval(ctx, c.withSource())
	}
	return res
}

// lost is ready after a NOSCRIPT: the server may hold an older snapshot.
func (r *runner) lost(ctx context.Context) *reply {
	r.upgraded.Store(false)
	return r.ready(ctx)
}

// runMany sends the calls in one pipeline and, for those refused with
// NOSCRIPT — after a SCRIPT FLUSH every pipelined EVALSHA is, since none of
// them loads the script — a second pipeline of EVALs for just those. The
// calls that ran, or whose outcome is unknown, are never sent again.
func (r *runner) runMany(ctx context.Context, cs []*call) []reply {
	if x := r.ready(ctx); x != nil {
		// Nothing of the batch was sent: every call shares the failure.
		res := make([]reply, len(cs))
		for i := range res {
			res[i] = *x
		}
		return res
	}
	res := r.c.evalMulti(ctx, cs)
	var again []int
	for i, x := range res {
		if isNoScript(x.Error()) {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return res
	}
	r.reloads.Add(1)
	if x := r.lost(ctx); x != nil {
		for _, i := range again {
			res[i] = *x
		}
		return res
	}
	retry := make([]*call, len(again))
	for j, i := range again {
		retry[j] = cs[i].withSource()
	}
	for j, x := range r.c.evalMulti(ctx, retry) {
		res[again[j]] = x
	}
	return res
}
