-- reset: the pool emptied (members, removed members, failures, cooldowns,
-- weights, streaks; not its settings) and refilled, only by the one who
-- created it.
-- KEYS[1] active sorted set, KEYS[2] removed hash, KEYS[3] failures hash,
-- KEYS[4] owner string, KEYS[5] cooling, KEYS[6] meta, KEYS[7] streaks,
-- KEYS[8..9] leases of the pool (by deadline, by member)
-- ARGV[1] the creator, ARGV[2] the members' count, ARGV[3..] the members
-- Returns 1, or the error AFLOAT_NOT_OWNER (nothing changed) when the
-- owner key does not hold ARGV[1].
if redis.call('GET', KEYS[4]) ~= ARGV[1] then
  return redis.error_reply('AFLOAT_NOT_OWNER')
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9])
for i = 3, #ARGV do
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[i])
end
return 1
