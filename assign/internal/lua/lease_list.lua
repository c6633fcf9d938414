-- lease_list: in-flight counts of active and removed members, and the
-- number of open leases.
if redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 then
  return redis.error_reply('AFLOAT_UNKNOWN_POOL')
end
return {
  redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES'),
  redis.call('HGETALL', KEYS[2]),
  redis.call('ZCARD', KEYS[3]),
}
