-- pool_acquire: the least-used member that has room under its
-- concurrency cap (and is not cooling), counted as a pick and leased, in
-- one atomic step. Expired leases are settled first (up to ARGV[2] of the
-- pool's, and every one of the member's before it is weighed).
-- KEYS[1..5] the pool (pool_common), KEYS[6] leases by deadline, KEYS[7]
-- leases by member
-- ARGV[1] the lease's time to live in ms, ARGV[2] the most expired
-- leases to reclaim first
-- Returns {member, lease id, deadline in ms}; or nil for an empty pool,
-- AFLOAT_UNKNOWN_POOL, or AFLOAT_COOLING <ms> when every member is
-- cooling or full: a lease never goes over a cap, so the last resort does
-- not apply.
LEASES, LEASEIDX = KEYS[6], KEYS[7]
lease_lib()
local now = now_ms()
reclaim(now, tonumber(ARGV[2]))
thaw(now)
while true do
  local m = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
  if not m then break end
  if redis.call('HEXISTS', KEYS[4], 'k|' .. m) == 1 then
    reclaim_member(m, now) -- parks m if it has no room
  end
  if redis.call('ZSCORE', KEYS[1], m) then
    bump(m)
    local id = tostring(redis.call('HINCRBY', KEYS[5], 'lease_seq', 1))
    local deadline = now + tonumber(ARGV[1])
    redis.call('ZADD', LEASES, deadline, id .. ' ' .. m)
    redis.call('ZADD', LEASEIDX, 0, lease_idx(m, deadline, id))
    redis.call('HINCRBY', KEYS[4], 'f|' .. m, 1)
    fit(m, now)
    return {m, id, string.format('%d', deadline)}
  end
end
local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
if not first[1] then
  if redis.call('EXISTS', KEYS[2]) == 0 then
    return redis.error_reply('AFLOAT_UNKNOWN_POOL')
  end
  return false
end
return redis.error_reply('AFLOAT_COOLING ' .. first[2])
