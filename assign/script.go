package assign

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"strings"
	"sync/atomic"

	"github.com/redis/rueidis"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// script is a Lua script run by its SHA-1 (EVALSHA), so that a pick sends
// 40 bytes instead of the script. The SHA is computed here, not asked of
// the server, so nothing is loaded ahead: the first EVALSHA on a server
// that lacks the script gets NOSCRIPT, and the fallback's EVAL both runs it
// and puts it in the server's cache. EVAL is routed by its keys, so the
// fallback works on Redis Cluster too, where SCRIPT LOAD would go to a
// random node.
type script struct {
	name string
	src  string
	sha  string
}

func loadScript(name string, prelude ...string) *script {
	b, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err) // the embedded files are fixed at build time
	}
	src := strings.Join(append(prelude, string(b)), "\n")
	sum := sha1.Sum([]byte(src))
	return &script{name: name, src: src, sha: hex.EncodeToString(sum[:])}
}

func prelude(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// pickOne is the seed's pick, prepended to every script that picks.
var pickOne = prelude("pick_one")

func leaseScript(name string) *script {
	return loadScript(name, pickOne, prelude("lease_common"))
}

var (
	pickScript = loadScript("pick", pickOne)
	// pickManyScript is PickBatch's: up to PickChunk picks in one call.
	pickManyScript = loadScript("pick_many", pickOne)
	addScript      = loadScript("add")
	removeScript   = loadScript("remove")
	restoreScript  = loadScript("restore")
	listScript     = loadScript("list")

	acquireScript      = leaseScript("acquire")
	releaseScript      = leaseScript("release")
	reclaimScript      = leaseScript("reclaim")
	leaseMembersScript = loadScript("lease_members")
	leaseListScript    = loadScript("lease_list")
)

// PickScript returns the pick's Lua source and its SHA-1, for peers that
// run the same script (redis-benchmark in afloat assign bench).
func PickScript() (src, sha string) { return pickScript.src, pickScript.sha }

func (s *script) evalsha(c rueidis.Client, keys, args []string) rueidis.Completed {
	return c.B().Evalsha().Sha1(s.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

func (s *script) eval(c rueidis.Client, keys, args []string) rueidis.Completed {
	return c.B().Eval().Script(s.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

func isNoScript(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && re.IsNoScript()
}

// runner runs scripts with the NOSCRIPT fallback and counts the fallbacks.
type runner struct {
	c       rueidis.Client
	reloads atomic.Int64
}

// run runs s by SHA and, if the server has lost its script cache (a
// restart, a failover, SCRIPT FLUSH), once more with the source. NOSCRIPT
// is a refusal before the script ran, so the retry cannot count twice.
func (r *runner) run(ctx context.Context, s *script, keys, args []string) rueidis.RedisResult {
	res := r.c.Do(ctx, s.evalsha(r.c, keys, args))
	if isNoScript(res.Error()) {
		r.reloads.Add(1)
		res = r.c.Do(ctx, s.eval(r.c, keys, args))
	}
	return res
}

// runPinned is run with the EVALSHA built (and pinned) by the caller.
func (r *runner) runPinned(ctx context.Context, cmd rueidis.Completed, s *script, keys, args []string) rueidis.RedisResult {
	res := r.c.Do(ctx, cmd)
	if isNoScript(res.Error()) {
		r.reloads.Add(1)
		res = r.c.Do(ctx, s.eval(r.c, keys, args))
	}
	return res
}

// runMany sends the calls in one pipeline and, for those refused with
// NOSCRIPT — after a SCRIPT FLUSH every pipelined EVALSHA is, since none of
// them loads the script — a second pipeline of EVALs for just those. The
// calls that ran, or whose outcome is unknown, are never sent again.
func (r *runner) runMany(ctx context.Context, s *script, keys [][]string, args [][]string) []rueidis.RedisResult {
	cmds := make(rueidis.Commands, len(keys))
	for i := range keys {
		cmds[i] = s.evalsha(r.c, keys[i], args[i])
	}
	return r.runManyBuilt(ctx, cmds, s, func(i int) ([]string, []string) { return keys[i], args[i] })
}

// runManyBuilt is runMany with the EVALSHAs built by the caller; call
// gives the keys and arguments of call i for its EVAL.
func (r *runner) runManyBuilt(ctx context.Context, cmds rueidis.Commands, s *script, call func(int) ([]string, []string)) []rueidis.RedisResult {
	res := r.c.DoMulti(ctx, cmds...)
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
	retry := make(rueidis.Commands, 0, len(again)) // sent commands are recycled by the client
	for _, i := range again {
		k, a := call(i)
		retry = append(retry, s.eval(r.c, k, a))
	}
	for j, x := range r.c.DoMulti(ctx, retry...) {
		res[again[j]] = x
	}
	return res
}
