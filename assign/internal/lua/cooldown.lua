-- cooldown: members put aside until a time of the clock; picks skip them
-- and the first script to run after it returns them (thaw). A member
-- already cooling keeps the later of its two release times, so that no
-- worker's Retry-After is cut short. All or nothing.
-- KEYS[1..5] the pool (pool_common)
-- ARGV[1] 'at' (ARGV[2] is the release time in ms) or 'for' (ARGV[2] ms
--         from now); ARGV[3..] the members
-- Returns the release time of each member, in ms.
pool_lib()
if not exists_pool() then
  return redis.error_reply('AFLOAT_UNKNOWN_POOL')
end
local now = now_ms()
thaw(now)
for i = 3, #ARGV do
  if not redis.call('ZSCORE', KEYS[1], ARGV[i]) and not redis.call('ZSCORE', KEYS[3], ARGV[i]) then
    return redis.error_reply('AFLOAT_NOT_ACTIVE ' .. ARGV[i])
  end
end
local release = tonumber(ARGV[2])
if ARGV[1] == 'for' then release = now + release end
local out = {}
for i = 3, #ARGV do
  if release > now then
    out[#out + 1] = cool(ARGV[i], release)
  else
    -- Over already: nothing to put aside, but a cooldown running keeps on.
    out[#out + 1] = tonumber(redis.call('ZSCORE', KEYS[3], ARGV[i]) or now)
  end
end
return out
