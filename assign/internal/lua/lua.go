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

// pickOne is the seed's pick, prepended to every script that picks.
var pickOne = read("pick_one")

func lease(name string) *Script { return load(name, pickOne, read("lease_common")) }

// The scripts of package assign.
var (
	Pick = load("pick", pickOne)
	// PickMany is PickBatch's: up to assign.PickChunk picks in one call.
	PickMany = load("pick_many", pickOne)
	Add      = load("add")
	Remove   = load("remove")
	Restore  = load("restore")
	List     = load("list")
	// Create and Reset make and remake a pool with its creator recorded.
	Create = load("create")
	Reset  = load("reset")

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
	Active, Removed, Failures, ReqPrefix string
	Owner                                string // the creator Create recorded
	// least-in-flight
	Inflight, Parked, Leases, LeaseMembers, LeaseSeq string
}

// PoolKeys returns the keys of the pool name.
func PoolKeys(name string) Keys {
	p := "afloat:assign:{" + name + "}:"
	return Keys{
		Active: p + "counts", Removed: p + "removed", Failures: p + "failures", ReqPrefix: p + "req:", Owner: p + "owner",
		Inflight: p + "inflight", Parked: p + "inflight-removed", Leases: p + "leases",
		LeaseMembers: p + "lease-members", LeaseSeq: p + "lease-seq",
	}
}
