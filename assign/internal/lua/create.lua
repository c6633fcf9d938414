-- create: the pool made from nothing, with its creator recorded, or
-- nothing at all.
-- KEYS[1] active sorted set, KEYS[2] removed hash, KEYS[3] failures hash,
-- KEYS[4] owner string, KEYS[5] cooling, KEYS[6] meta, KEYS[7] streaks,
-- KEYS[8..9] leases of the pool (by deadline, by member)
-- (the settings are not the pool's: they may come first)
-- ARGV[1] the creator, ARGV[2] the members' count, ARGV[3..] the members
-- Returns 1 if it created the pool, 0 if any of its keys was there (then
-- it changed nothing).
if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]) > 0 then
  return 0
end
for i = 3, #ARGV do
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[i])
end
redis.call('SET', KEYS[4], ARGV[1])
return 1
