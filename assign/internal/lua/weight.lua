-- weight: members' weights set, their counts kept: an active member's
-- score becomes count / weight at once. All or nothing: every member must
-- be active, cooling or removed.
-- KEYS[1..5] the pool (pool_common)
-- ARGV[1] the weight; ARGV[2..] the members
pool_lib()
if not exists_pool() then
  return redis.error_reply('AFLOAT_UNKNOWN_POOL')
end
thaw(now_ms()) -- every decision on the pool as of one instant
for i = 2, #ARGV do
  local m = ARGV[i]
  if not redis.call('ZSCORE', KEYS[1], m) and not redis.call('ZSCORE', KEYS[3], m)
    and redis.call('HEXISTS', KEYS[2], m) == 0 then
    return redis.error_reply('AFLOAT_NOT_MEMBER ' .. m)
  end
end
local w = tonumber(ARGV[1])
for i = 2, #ARGV do
  local m = ARGV[i]
  local old, l = spec(redis.call('HGET', KEYS[4], 'm|' .. m))
  local c = active_count(m)
  if old ~= w then set_spec(m, w, l) end
  if c then put(m, c, w) end
end
if w == 1 then meta_closed() else meta_opened() end
return #ARGV - 1
