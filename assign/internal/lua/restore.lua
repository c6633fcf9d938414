-- restore: removed members rejoin under a policy. All or nothing.
-- KEYS[1] active sorted set, KEYS[2] removed hash
-- ARGV[1] 'keep' (the historical count), 'min' (the active members'
--         current minimum, taken before any of these rejoin; the
--         historical count when no member is active) or 'zero'
-- ARGV[2..] the members
if redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 then
  return redis.error_reply('AFLOAT_UNKNOWN_POOL')
end
for i = 2, #ARGV do
  if redis.call('HEXISTS', KEYS[2], ARGV[i]) == 0 then
    return redis.error_reply('AFLOAT_NOT_REMOVED ' .. ARGV[i])
  end
end
local lo = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]
for i = 2, #ARGV do
  local c
  if ARGV[1] == 'zero' then
    c = 0
  elseif ARGV[1] == 'min' and lo then
    c = lo
  else
    c = redis.call('HGET', KEYS[2], ARGV[i])
  end
  redis.call('ZADD', KEYS[1], c, ARGV[i])
  redis.call('HDEL', KEYS[2], ARGV[i])
end
return #ARGV - 1
