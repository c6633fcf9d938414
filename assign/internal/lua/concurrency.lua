-- concurrency: members' concurrency caps set (ARGV[1] leases in flight
-- at most) or, with ARGV[1] = 0, cleared. All or nothing: every member
-- must be active, cooling or removed. A member with no room under its new
-- cap is out until it has room; one with room again is back.
-- KEYS[1..5] the pool (pool_common), KEYS[6..7] its leases
-- Returns how many members changed.
LEASES, LEASEIDX = KEYS[6], KEYS[7]
lease_lib()
if not exists_pool() then
  return redis.error_reply('AFLOAT_UNKNOWN_POOL')
end
local now = now_ms()
thaw(now)
for i = 2, #ARGV do
  local m = ARGV[i]
  if not redis.call('ZSCORE', KEYS[1], m) and not redis.call('ZSCORE', KEYS[3], m)
    and redis.call('HEXISTS', KEYS[2], m) == 0 then
    return redis.error_reply('AFLOAT_NOT_MEMBER ' .. m)
  end
end
for i = 2, #ARGV do
  local m = ARGV[i]
  if ARGV[1] == '0' then
    redis.call('HDEL', KEYS[4], 'k|' .. m)
  else
    redis.call('HSET', KEYS[4], 'k|' .. m, ARGV[1])
  end
  reclaim_member(m, now)
end
if ARGV[1] == '0' then meta_closed() else meta_opened() end
return #ARGV - 1
