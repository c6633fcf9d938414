-- list: the pool at one instant, cooldowns that have ended returned
-- first.
-- KEYS[1..5] the pool (pool_common), KEYS[6] failures hash, KEYS[7]
-- failure streaks hash, KEYS[8..9] its leases (expired ones are settled
-- first, up to ARGV[1]), KEYS[10] its creator
-- Returns {active members and scores, removed members and counts,
-- failures by member, cooling members and release times, meta, streaks,
-- settings, now, the leases open ('id member' and deadline, up to ARGV[2]
-- of the first to end), how many are open, the creator (false for
-- none)}, each but now, the number and the creator a flat list of name,
-- value.
LEASES, LEASEIDX = KEYS[8], KEYS[9]
lease_lib()
if not exists_pool() then
  return redis.error_reply('AFLOAT_UNKNOWN_POOL')
end
local now = now_ms()
reclaim(now, tonumber(ARGV[1]))
thaw(now)
return {
  redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES'),
  redis.call('HGETALL', KEYS[2]),
  redis.call('HGETALL', KEYS[6]),
  redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES'),
  redis.call('HGETALL', KEYS[4]),
  redis.call('HGETALL', KEYS[7]),
  redis.call('HGETALL', KEYS[5]),
  num(now),
  redis.call('ZRANGE', LEASES, 0, tonumber(ARGV[2]) - 1, 'WITHSCORES'),
  redis.call('ZCARD', LEASES),
  redis.call('GET', KEYS[10]),
}
