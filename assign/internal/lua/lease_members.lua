-- lease_members: add (ARGV[1] = 'add') or remove ('remove') members of a
-- least-in-flight pool. A removed member's in-flight count is parked, and
-- leases on it still settle there; it comes back with it. All or nothing.
-- ARGV[2..] the members. Returns how many changed.
local n = 0
if ARGV[1] == 'add' then
  for i = 2, #ARGV do
    if not redis.call('ZSCORE', KEYS[1], ARGV[i]) then
      local c = redis.call('HGET', KEYS[2], ARGV[i]) or 0
      redis.call('ZADD', KEYS[1], c, ARGV[i])
      redis.call('HDEL', KEYS[2], ARGV[i])
      n = n + 1
    end
  end
  return n
end
if redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 then
  return redis.error_reply('AFLOAT_UNKNOWN_POOL')
end
for i = 2, #ARGV do
  if not redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    return redis.error_reply('AFLOAT_NOT_ACTIVE ' .. ARGV[i])
  end
end
for i = 2, #ARGV do
  redis.call('HSET', KEYS[2], ARGV[i], redis.call('ZSCORE', KEYS[1], ARGV[i]))
  redis.call('ZREM', KEYS[1], ARGV[i])
  n = n + 1
end
return n
