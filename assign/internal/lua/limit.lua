-- limit: members' rate limits set (ARGV[1] requests per ARGV[2] ms, with
-- bursts of ARGV[3]) or, with ARGV[1] = 0, cleared. All or nothing: every
-- member must be active, cooling or removed. A member whose past picks
-- leave it no room under the new limit cools until it has room.
-- KEYS[1..5] the pool (pool_common)
-- Returns how many members changed.
pool_lib()
if not exists_pool() then
  return redis.error_reply('AFLOAT_UNKNOWN_POOL')
end
local now = now_ms()
thaw(now)
for i = 4, #ARGV do
  local m = ARGV[i]
  if not redis.call('ZSCORE', KEYS[1], m) and not redis.call('ZSCORE', KEYS[3], m)
    and redis.call('HEXISTS', KEYS[2], m) == 0 then
    return redis.error_reply('AFLOAT_NOT_MEMBER ' .. m)
  end
end
local rate, per, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
for i = 4, #ARGV do
  local m = ARGV[i]
  local w = weight(m)
  if rate == 0 then
    set_spec(m, w, nil)
    redis.call('HDEL', KEYS[4], 't|' .. m)
  else
    local t = per / rate
    set_spec(m, w, num(t) .. ' ' .. ARGV[3] .. ' ' .. ARGV[1] .. ' ' .. ARGV[2])
    local tat = tonumber(redis.call('HGET', KEYS[4], 't|' .. m))
    if tat and redis.call('ZSCORE', KEYS[1], m) then
      local free = math.ceil(tat - (burst - 1) * t)
      if free > now then cool(m, free) end
    end
  end
end
if rate == 0 then meta_closed() else meta_opened() end
return #ARGV - 3
