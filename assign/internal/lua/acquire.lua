-- acquire: reclaim expired leases, then lease the member with the fewest
-- in flight (ties by member name, as ZRANGE orders them).
-- ARGV[1] the lease's time to live in ms; ARGV[2] the most expired leases
-- to reclaim first
-- Returns {member, lease id, deadline in ms}, or nil for an empty pool.
local now = now_ms()
reclaim(now, tonumber(ARGV[2]))
local m, none = pick_one() -- KEYS[1] counts what is in flight
if not m then return none end
local id = tostring(redis.call('INCR', KEYS[5]))
local deadline = now + tonumber(ARGV[1])
redis.call('ZADD', KEYS[3], deadline, id)
redis.call('HSET', KEYS[4], id, m)
return {m, id, tostring(deadline)}
