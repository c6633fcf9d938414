-- pick: the seed's least-used pick, in one atomic step.
-- KEYS[1] the active members' sorted set (score = assignments)
-- KEYS[2] the hash of removed members' counts (only to tell an empty pool
--         from an unknown one)
-- KEYS[3] optional: the request id's record, which makes a retried pick
--         return the member it got the first time without counting twice
-- ARGV[1] with KEYS[3]: the record's time to live in milliseconds
if KEYS[3] then
  local done = redis.call('GET', KEYS[3])
  if done then return done end
end
-- ZRANGE orders equal scores by member, so ties go to the lowest name.
local m = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
if not m then
  if redis.call('EXISTS', KEYS[2]) == 0 then
    return redis.error_reply('AFLOAT_UNKNOWN_POOL')
  end
  return false
end
redis.call('ZINCRBY', KEYS[1], 1, m)
if KEYS[3] then
  redis.call('SET', KEYS[3], m, 'PX', ARGV[1])
end
return m
