-- failure: a failed request through a member. It counts (KEYS[6]); for a
-- member of the pool (active or cooling) it lengthens the member's streak
-- of failures in a row (KEYS[7]), and the streak reaching the pool's
-- 'evict' setting evicts the member as remove does (its count kept for
-- restore, its streak and cooldown ended); else a retry-after puts it
-- aside as cooldown does.
-- KEYS[1..5] the pool (pool_common), KEYS[6] failures, KEYS[7] streaks
-- KEYS[8] optional: the request id's record, which makes a failure sent
--         again after a lost connection answer as the first time did
--         instead of counting twice
-- ARGV[1] the member, ARGV[2] retry after, in ms (0: none)
-- ARGV[3] with KEYS[8]: the record's time to live in milliseconds
-- Returns {streak, outcome, release time in ms}: outcome 0 counted (not
-- a member), 1 counted (streak), 2 cooling, 3 evicted.
pool_lib()
if KEYS[8] then
  local done = redis.call('GET', KEYS[8])
  if done then
    local s, o, r = string.match(done, '^(%S+) (%S+) (%S+)$')
    return {tonumber(s), tonumber(o), tonumber(r)}
  end
end
local function fail()
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
end
local out = fail()
if KEYS[8] then
  redis.call('SET', KEYS[8], num(out[1]) .. ' ' .. num(out[2]) .. ' ' .. num(out[3]), 'PX', ARGV[3])
end
return out
