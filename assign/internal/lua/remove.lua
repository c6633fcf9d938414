-- remove: members leave the pool; their counts are kept in the removed
-- hash for restore. All or nothing: if one member is not active, nothing
-- changes.
-- KEYS[1] active sorted set, KEYS[2] removed hash; ARGV the members
if redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 then
  return redis.error_reply('AFLOAT_UNKNOWN_POOL')
end
for i = 1, #ARGV do
  if not redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    return redis.error_reply('AFLOAT_NOT_ACTIVE ' .. ARGV[i])
  end
end
for i = 1, #ARGV do
  local c = redis.call('ZSCORE', KEYS[1], ARGV[i])
  redis.call('HSET', KEYS[2], ARGV[i], c)
  redis.call('ZREM', KEYS[1], ARGV[i])
end
return #ARGV
