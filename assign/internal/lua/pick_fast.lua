-- pick_fast: a pick without a request id, done here before the rest of
-- the script (pool_common's helpers and pick.lua) makes any of its
-- functions: a Lua function made is an allocation on every run, and a
-- call to Redis is most of what a pick costs the server, so the common
-- picks make no function and as few calls as they can. A reply that is
-- an array (ZRANGE, HMGET, TIME) costs the server about a microsecond more
-- than one that is not (Redis makes it a Lua table), so the pick asks
-- for a single value where it can.
-- The first call, an HGET of meta's 'due' (pool_common), answers two
-- questions: nil, a plain pool (no cooling, weighted, limited or capped
-- member), whose pick is the seed's: three calls; else when a member out
-- may be back ('-': none is out).
-- A busy pool: then the least active member (ZRANGE WITHSCORES), its
-- weight and limit in one HGET of its 'm|' field (meta is a hash table,
-- so a lookup, not a scan); TIME only if a member is out or this one is
-- limited; the count (ZINCRBY, or ZADD of count / weight: Redis writes a
-- number argument with 17 digits, exactly as num does); for a limited
-- member, HGET and HSET of its GCRA time. Five calls for the common busy
-- pick (the plain pick's three, the HGET and TIME), where an EXISTS and
-- an HMGET of three fields took the place of the two HGETs before. A busy
-- pool's sorted set is a skiplist (skiplist.lua), so the count finds its
-- member and place without a scan of the scores before them.
-- Anything else — an id, no member active, 'due' come (a cooldown may be
-- over: thaw), a limit this pick uses up (the member cools) — falls
-- through to pick.lua, which decides it all again: nothing is written
-- here before that decision.
-- PLAIN and NOW are pool_common's (declared here, ahead of it, in this
-- script), so that the pool's 'due' and the clock are asked once.
local PLAIN, NOW
if not KEYS[6] then
  local due = redis.call('HGET', KEYS[4], 'due')
  PLAIN = not due
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
      -- m's 'm|' field: its weight, or its weight, a space and its limit
      -- (pool_common's spec, inline).
      local v = redis.call('HGET', KEYS[4], 'm|' .. m)
      local w, ts, bs = 1, nil, nil
      if v then
        w = tonumber(v)
        if not w then
          local ws
          ws, ts, bs = string.match(v, '^(%S+) (%S+) (%S+)')
          w = tonumber(ws)
        end
      end
      if (ts or due ~= '-') and not NOW then
  --CLOCK--
      end
      local ready = due == '-' or tonumber(due) > NOW
      local tat
      if ready and ts then
        -- spend's GCRA (pool_common), inline: the pick goes on here only
        -- if m has room left after it.
        local t = tonumber(ts)
        tat = math.max(tonumber(redis.call('HGET', KEYS[4], 't|' .. m)) or NOW, NOW) + t
        ready = math.ceil(tat - (tonumber(bs) - 1) * t) <= NOW
      end
      if ready then
        if w == 1 then
          redis.call('ZINCRBY', KEYS[1], 1, m)
        else
          redis.call('ZADD', KEYS[1], (math.floor(tonumber(ms[2]) * w + 0.5) + 1) / w, m)
        end
        if tat then redis.call('HSET', KEYS[4], 't|' .. m, tat) end
        return m
      end
    end
  end
end
