-- pick_fast: a pick without a request id, done here before the rest of
-- the script (pool_common's helpers and pick.lua) makes any of its
-- functions: a Lua function made is an allocation on every run, and a
-- call to Redis is most of what a pick costs the server, so the common
-- picks make no function and as few calls as they can.
-- A plain pool (no cooling, weighted, limited or capped member: no meta)
-- is the seed's pick after one EXISTS: three calls.
-- A busy pool: after the EXISTS, the least active member (ZRANGE
-- WITHSCORES), then in one HMGET its weight, its limit and the pool's
-- 'next' (pool_common: at or before the first release of a member out;
-- meta is a hash table, so these are three lookups, not scans); TIME
-- only if a member is out or this one is limited; the count (ZINCRBY, or
-- ZADD of count / weight: Redis writes a number argument with 17
-- digits, exactly as num does); for a limited member, HGET and HSET of
-- its GCRA time. Five calls for the common busy pick (the plain pick's
-- three, the HMGET and TIME), where reading the cooling set first took
-- six, and every reply that is an array (ZRANGE, HMGET, TIME) costs the
-- server more than one that is not.
-- Anything else — an id, no member active, 'next' come (a cooldown may
-- be over: thaw), a limit this pick uses up (the member cools) — falls
-- through to pick.lua, which decides it all again: nothing is written
-- here before that decision.
-- PLAIN and NOW are pool_common's (declared here, ahead of it, in this
-- script), so that the pool's EXISTS and the clock are asked once.
local PLAIN, NOW
if not KEYS[6] then
  PLAIN = redis.call('EXISTS', KEYS[4]) == 0
  if PLAIN then
    local m = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
    if m then
      redis.call('ZINCRBY', KEYS[1], 1, m)
      return m
    end
  else
    local ms = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    local m = ms[1]
    if m then
      local x = redis.call('HMGET', KEYS[4], 'w|' .. m, 'l|' .. m, 'next')
      if (x[2] or x[3]) and not NOW then
  --CLOCK--
      end
      local ready = not x[3] or tonumber(x[3]) > NOW
      local tat
      if ready and x[2] then
        -- spend's GCRA (pool_common), inline: the pick goes on here only
        -- if m has room left after it.
        local ts, bs = string.match(x[2], '^(%S+) (%S+)')
        local t = tonumber(ts)
        tat = math.max(tonumber(redis.call('HGET', KEYS[4], 't|' .. m)) or NOW, NOW) + t
        ready = math.ceil(tat - (tonumber(bs) - 1) * t) <= NOW
      end
      if ready then
        if not x[1] then
          redis.call('ZINCRBY', KEYS[1], 1, m)
        else
          local w = tonumber(x[1])
          redis.call('ZADD', KEYS[1], (math.floor(tonumber(ms[2]) * w + 0.5) + 1) / w, m)
        end
        if tat then redis.call('HSET', KEYS[4], 't|' .. m, tat) end
        return m
      end
    end
  end
end
