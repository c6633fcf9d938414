-- list: the pool at one instant, cooldowns that have ended returned
-- first.
-- KEYS[1..5] the pool (pool_common), KEYS[6] failures hash, KEYS[7]
-- failure streaks hash
-- Returns {active members and scores, removed members and counts,
-- failures by member, cooling members and release times, meta, streaks,
-- settings, now}, each but now a flat list of name, value.
pool_lib()
if not exists_pool() then
  return redis.error_reply('AFLOAT_UNKNOWN_POOL')
end
local now = now_ms()
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
}
