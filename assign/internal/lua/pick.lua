-- pick: the least-used member not cooling (pool_pick, prepended), in one
-- atomic step.
-- KEYS[1..5] the pool (pool_common)
-- KEYS[6] optional: the request id's record, which makes a retried pick
--         return the member it got the first time without counting twice
-- ARGV[1] with KEYS[6]: the record's time to live in milliseconds
if KEYS[6] then
  local done = redis.call('GET', KEYS[6])
  if done then return done end
end
local m, none = pool_pick()
if not m then return none end
if KEYS[6] then
  redis.call('SET', KEYS[6], m, 'PX', ARGV[1])
end
return m
