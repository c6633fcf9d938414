-- remove: members leave the pool, cooling or not (a cooldown ends with
-- the removal); their counts are kept in the removed hash for restore,
-- their weights in meta. All or nothing: if one member is neither active
-- nor cooling, nothing changes.
-- KEYS[1..5] the pool (pool_common); ARGV the members
pool_lib()
if not exists_pool() then
  return redis.error_reply('AFLOAT_UNKNOWN_POOL')
end
thaw(now_ms()) -- every decision on the pool as of one instant
for i = 1, #ARGV do
  if not redis.call('ZSCORE', KEYS[1], ARGV[i]) and not redis.call('ZSCORE', KEYS[3], ARGV[i]) then
    return redis.error_reply('AFLOAT_NOT_ACTIVE ' .. ARGV[i])
  end
end
for i = 1, #ARGV do
  redis.call('HSET', KEYS[2], ARGV[i], num(take(ARGV[i])))
end
return #ARGV
