package lua

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"strings"
)

//go:embed *.lua
var files embed.FS

// Script is a Lua script with its SHA-1, the name EVALSHA runs it by.
type Script struct {
	Name string
	Src  string
	SHA  string
}

// load reads name.lua after the preludes. The SHA is computed here, not
// asked of a server, so that nothing needs loading ahead.
func load(name string, prelude ...string) *Script {
	src := strings.Join(append(prelude, read(name)), "\n")
	sum := sha1.Sum([]byte(src))
	return &Script{Name: name, Src: src, SHA: hex.EncodeToString(sum[:])}
}

func read(name string) string {
	b, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic(err) // the embedded files are fixed at build time
	}
	return string(b)
}

// pickOne is the seed's pick, prepended to the least-in-flight scripts
// and to the pool's, whose plain pool picks so.
var pickOne = read("pick_one")

func lease(name string) *Script { return load(name, pickOne, read("lease_common")) }

// Set is the pool's scripts that read the clock, built on one clock.
type Set struct {
	Pick *Script
	// PickMany is PickBatch's: up to assign.PickChunk picks in one call.
	PickMany, Add, Remove, Restore, List *Script
	Cooldown, Failure, Weight            *Script
	PickSticky, Limit                    *Script
	// Acquire, Release and Concurrency are the pool's leases under
	// concurrency caps.
	Acquire, Release, Concurrency *Script
}

func newSet(clock string) *Set {
	// --CLOCK-- is a line of its own: the clock's statement, which sets NOW.
	withClock := func(name string) string {
		src := read(name)
		if strings.Count(src, "  --CLOCK--\n") != 1 {
			panic(name + ".lua has not one --CLOCK-- line") // the embedded files are fixed at build time
		}
		return strings.Replace(src, "  --CLOCK--\n", read(clock), 1)
	}
	base := pickOne + "\n" + read("skiplist") + "\n" + withClock("pool_common")
	pre := "local PLAIN, NOW -- pool_pick's: is the pool plain (nil: not asked yet); the clock, once read\n" + base
	leases := pre + "\n" + read("lease_pool")
	s := func(name string) *Script { return load(name, pre) }
	l := func(name string) *Script { return load(name, leases) }
	return &Set{
		Pick: load("pick", withClock("pick_fast"), base), PickMany: s("pick_many"), Add: s("add"), Remove: s("remove"),
		Restore: l("restore"), List: l("list"), Cooldown: s("cooldown"), Failure: s("failure"),
		Weight: s("weight"), PickSticky: s("pick_sticky"), Limit: s("limit"),
		Acquire: l("pool_acquire"), Release: l("pool_release"), Concurrency: l("concurrency"),
	}
}

// The scripts of package assign.
var (
	// Pool is the pool's scripts on Redis's clock (TIME): the only set a
	// user's program runs.
	Pool = newSet("clock")
	// TestClock is the same scripts on a clock the tests set (the pool's
	// key "testclock", in ms), so that a property test steps the scripts'
	// time as it steps its model's. Package assign uses it only from its
	// tests; no exported name reaches it.
	TestClock = newSet("clock_test")

	Pick = Pool.Pick
	// Create and Reset make and remake a pool with its creator recorded.
	Create = load("create")
	Reset  = load("reset")
	// Sweep is a step of Delete's sweep of the pool's records by id.
	Sweep = load("sweep")
	// Upgrade brings a pool of an older layout of meta to the scripts'
	// (upgrade.lua); the client runs it before its first script on a pool.
	Upgrade = load("upgrade", read("skiplist"))

	Acquire      = lease("acquire")
	Release      = lease("release")
	Reclaim      = lease("reclaim")
	LeaseMembers = load("lease_members")
	LeaseList    = load("lease_list")
)

// Keys are the Redis keys of one pool. Every key carries the pool name as
// a hash tag ({name}), so that a pool's keys share a Redis Cluster slot
// and its scripts can run there.
type Keys struct {
	// Prefix begins every key of the pool: afloat:assign:{name}:
	Prefix                               string
	Active, Removed, Failures, ReqPrefix string
	FailReqPrefix                        string // a failure's request id: FailReqPrefix + id
	StickyPrefix                         string // a sticky key's member: StickyPrefix + key
	Owner                                string // the creator Create recorded
	// cooldowns, weights, failure streaks and the pool's settings
	Cooling, Meta, Streaks, Settings string
	// the pool's leases under concurrency caps: by deadline, by member
	PoolLeases, PoolLeaseIndex string
	// least-in-flight
	Inflight, Parked, Leases, LeaseMembers, LeaseSeq string
}

// PoolKeys returns the keys of the pool name.
func PoolKeys(name string) Keys {
	p := "afloat:assign:{" + name + "}:"
	return Keys{
		Prefix: p,
		Active: p + "counts", Removed: p + "removed", Failures: p + "failures", ReqPrefix: p + "req:", FailReqPrefix: p + "failreq:", Owner: p + "owner", StickyPrefix: p + "sticky:",
		Cooling: p + "cooling", Meta: p + "meta", Streaks: p + "streaks", Settings: p + "settings",
		PoolLeases: p + "held", PoolLeaseIndex: p + "held-by-member",
		Inflight: p + "inflight", Parked: p + "inflight-removed", Leases: p + "leases",
		LeaseMembers: p + "lease-members", LeaseSeq: p + "lease-seq",
	}
}
