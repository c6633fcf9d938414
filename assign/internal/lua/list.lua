-- list: the pool at one instant.
-- KEYS[1] active sorted set, KEYS[2] removed hash, KEYS[3] failures hash
-- Returns {active members and counts, removed members and counts,
-- failures by member}, each a flat list of name, number.
if redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 then
  return redis.error_reply('AFLOAT_UNKNOWN_POOL')
end
return {
  redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES'),
  redis.call('HGETALL', KEYS[2]),
  redis.call('HGETALL', KEYS[3]),
}
