-- pick: the seed's least-used pick (pick_one, prepended), in one atomic
-- step.
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
local m, none = pick_one()
if not m then return none end
if KEYS[3] then
  redis.call('SET', KEYS[3], m, 'PX', ARGV[1])
end
return m
