-- failure: a failed request through a member. It counts (KEYS[6]); for a
-- member of the pool (active or cooling) it lengthens the member's streak
-- of failures in a row (KEYS[7]), and the streak reaching the pool's
-- 'evict' setting evicts the member as remove does (its count kept for
-- restore, its streak and cooldown ended); else a retry-after puts it
-- aside as cooldown does.
-- KEYS[1..5] the pool (pool_common), KEYS[6] failures, KEYS[7] streaks
-- ARGV[1] the member, ARGV[2] retry after, in ms (0: none)
-- Returns {streak, outcome, release time in ms}: outcome 0 counted (not
-- a member), 1 counted (streak), 2 cooling, 3 evicted.
pool_lib()
local m = ARGV[1]
redis.call('HINCRBY', KEYS[6], m, 1)
local now = now_ms()
thaw(now)
if not redis.call('ZSCORE', KEYS[1], m) and not redis.call('ZSCORE', KEYS[3], m) then
  return {0, 0, 0}
end
local streak = redis.call('HINCRBY', KEYS[7], m, 1)
local evict = tonumber(redis.call('HGET', KEYS[5], 'evict') or '0')
if evict > 0 and streak >= evict then
  redis.call('HSET', KEYS[2], m, num(take(m)))
  redis.call('HDEL', KEYS[7], m)
  return {streak, 3, 0}
end
local after = tonumber(ARGV[2])
if after > 0 then
  return {streak, 2, cool(m, now + after)}
end
return {streak, 1, 0}
