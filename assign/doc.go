// Package assign gives each request the least-used member of a pool shared
// through Redis — an outbound proxy, an account, an API key — atomically
// across every worker and process (docs/assign.md).
//
// A pool is a Redis sorted set: one member per item, its score the number
// of assignments. A pick is one Lua script (internal/lua/pick.lua), run atomically
// by the server: the member with the lowest score (ZRANGE key 0 0; equal
// scores go to the lowest name in byte order, as ZRANGE orders them), then
// ZINCRBY key 1 member. No other worker's pick can fall between the read
// and the increment.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", MaxRetries: -1})
//	c, err := assign.FromGoRedis(rdb) // or FromRueidis: the caller's client
//	p, err := assign.New(c, "proxies")
//	p.Add(ctx, 0, "http://10.0.0.1:3128", "http://10.0.0.2:3128")
//	m, err := p.Pick(ctx)
//	if errors.Is(err, assign.ErrPoolEmpty) || errors.Is(err, assign.ErrUnknownPool) {
//		return err // no eligible member, or no pool of that name yet: make no request
//	}
//
// A pick's errors, together (errors.Is): ErrUnknownPool — no pool of that
// name has had a member on this Redis (never filled, or deleted);
// ErrPoolEmpty — the pool exists but no member is eligible (all removed,
// or all cooling: then it is also ErrAllCooling, a *CoolingError that
// says when the first comes back); ErrAmbiguous — the connection was lost
// after the script was sent, so the pick may have counted (retry with
// PickID and the same request id); ErrInvalid — an argument out of range,
// named. The first two mean the same to a caller that only wants a
// member — there is none — and are apart for the one that fills pools.
//
// The score counts assignments, whatever became of them; it is not a
// measure of work in progress. For work that takes a while there are two
// algorithms, each returning a Lease that Release ends (or the server, at
// its deadline, by its own clock): Pool.PickLease, the least used that
// has room under its concurrency cap (SetConcurrency), counted as a pick;
// and Leases.PickLeastInFlight, the member with the fewest leases open.
//
// Eligibility lives in Redis, so every worker agrees on it: Remove moves a
// member's count aside, Restore brings it back by a RestorePolicy (the
// current minimum by default; keeping the history or starting at zero pile
// picks onto it until it catches up); Add with AtMinimum starts newcomers
// level. Status reads it all at one instant; Delete removes everything a
// pool made. Package proxypool health-checks proxies from a list on a
// pool and gives an http.Client the least-used healthy one per request.
//
// A member can be put aside for a while (CooldownFor, or RecordFailure
// with the retry-after of a 429): no worker picks it until then, by
// Redis's clock, and it comes back by itself. N failures in a row
// (Settings.EvictAfter) evict a member; RecordSuccess ends a streak.
// When every member is cooling, a pick fails with a *CoolingError that
// says when the first comes back, or (LastResortEarliest) takes that one.
// A member of weight w (AddWeighted, SetWeight) takes w times the share;
// a member with a rate limit (SetLimit: GCRA on Redis's clock) cools
// whenever it has no room left, until it has.
// PickSticky keeps a key (a session) on the member it got while that
// member serves.
//
// Scripts run by SHA-1 and fall back to EVAL when the server has lost its
// script cache (restart, failover, SCRIPT FLUSH), resending only what the
// server refused — on the batched path too. A pool runs on the caller's
// own client, go-redis (FromGoRedis, which refuses one whose retries are
// on) or rueidis (FromRueidis), and never resends a call: a lost
// connection gives ErrAmbiguous, and a request id (PickID) makes a retry
// return the first answer instead of counting twice. Every key of a pool
// carries its name as a hash tag ({name}), so the scripts run on Redis
// Cluster.
package assign
