-- restore: removed members rejoin under a policy. All or nothing.
-- KEYS[1..5] the pool (pool_common), KEYS[6..7] its leases (a member
-- with no room under its concurrency cap comes back full)
-- ARGV[1] 'keep' (the historical count), 'min' (where the active
--         members' lowest score, taken before any of these rejoin, puts a
--         member of its weight: ceil(score × weight); the historical count
--         when no member is active) or 'zero'
-- ARGV[2..] the members
LEASES, LEASEIDX = KEYS[6], KEYS[7]
lease_lib()
if not exists_pool() then
  return redis.error_reply('AFLOAT_UNKNOWN_POOL')
end
local now = now_ms()
thaw(now) -- every decision on the pool as of one instant
for i = 2, #ARGV do
  if redis.call('HEXISTS', KEYS[2], ARGV[i]) == 0 then
    return redis.error_reply('AFLOAT_NOT_REMOVED ' .. ARGV[i])
  end
end
local lo = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]
for i = 2, #ARGV do
  local m = ARGV[i]
  local w = weight(m)
  local c
  if ARGV[1] == 'zero' then
    c = 0
  elseif ARGV[1] == 'min' and lo then
    c = math.ceil(tonumber(lo) * w)
  else
    c = tonumber(redis.call('HGET', KEYS[2], m))
  end
  redis.call('HDEL', KEYS[2], m)
  put(m, c, w)
  if redis.call('HEXISTS', KEYS[4], 'k|' .. m) == 1 then reclaim_member(m, now) end
end
keep_skiplist() -- KEYS[1] may have been made anew
return #ARGV - 1
