-- Shared by the pool's scripts (prepended to each; the clock, clock.lua
-- or clock_test.lua, goes in at --CLOCK--).
-- KEYS[1] active members' sorted set: score = count / weight
-- KEYS[2] removed members' counts (hash)
-- KEYS[3] cooling members: member → release time in ms of the clock
--         (sorted set, so the next release is ZRANGE 0 0: O(log n))
-- KEYS[4] meta (hash): 'm|'..m the weight of m and its rate limit, when
--         either is set (weight not 1, or a limit): the weight, then,
--         for a limited member, a space and the limit (the interval
--         between requests in ms, the burst, the rate and its period in
--         ms), so that a pick reads both in one HGET (a reply that is not
--         an array costs the server less); an active weighted member's
--         score is the quotient c / w, written with 17 digits, and its
--         count c is round(score × w): exact, as |score × w − c| <
--         c × 2^-52 < 0.5 for counts below 2^51; 't|'..m a limited
--         member's GCRA time; 'p|'..m the count of a cooling member,
--         parked while it is out of KEYS[1]
-- KEYS[5] settings (hash): 'evict' (failures in a row that evict, 0
--         never), 'last' ('fail' or 'earliest'), 'lease_seq' (the last
--         lease id)
-- Concurrency caps (in meta): 'k|'..m the cap of m, 'f|'..m its leases
-- in flight, 'F|'..m set while m is full: it is out of KEYS[1], in
-- KEYS[3] scored by when it has room (or the end of its own cooldown,
-- kept in 'F|'..m, whichever is later; 0 for none). The scripts that
-- open or end leases set LEASES (leases by deadline: a sorted set of
-- 'id member') and LEASEIDX (the same by member: 'member\0deadline\0id',
-- all at score 0, so that a member's leases are a ZRANGEBYLEX).
-- 'due' (in meta, a pool's field: no member's field lacks the '|') is
-- there whenever meta is (meta_opened puts it in), so that a pick's first
-- call, an HGET of it, answers both whether the pool is plain (no meta:
-- nil) and when a member out may be back: '-' while KEYS[3] is empty,
-- else a time at or before its first release. Every score put in KEYS[3]
-- goes through cool_at, which lowers it; thaw sets it to the first
-- release left (or '-'). So a busy pick reads neither the cooling set nor
-- the clock unless a member is out, and scans the cooling set only when
-- 'due' has come. A stale 'due' (its member taken out since) is early,
-- never late: it costs one thaw that returns nothing, never a missed
-- release.
-- 'table' (the pool's too) keeps meta a hash table: see meta_opened.
-- A pool with no cooling, weighted, limited or capped member has no
-- 'due' (and no KEYS[4], but for leases in flight 'f|'..m of members with
-- no cap, which no pick reads), and its pick is the seed's (one HGET
-- more).
-- A pool written before 'due' and 'm|' ('w|'..m, 'l|'..m, 'next' only
-- while a member was out) is brought to this layout by upgrade.lua, which
-- the client runs before its first script on the pool.

-- The helpers are made on a script's first need of them: the seed's pick
-- (pool_pick's first branch) runs without making one of them, and a Lua
-- function made is an allocation on every run of a script.
-- (NOW, the clock's reading, is declared ahead of this file with PLAIN.)
local num, weight, put, active_count, take, thaw, cool, cool_at, exists_pool, bump, now_ms, spend, none_ready
local meta_opened, meta_closed, spec, set_spec
local function pool_lib()
  if num then return end
  now_ms = function()
    if not NOW then
  --CLOCK--
    end
    return NOW
  end
  -- meta_opened, after a field may have made meta, gives it 'due' ('-'
  -- if no member is out: cool_at sets it otherwise) and 'table', a value
  -- longer than Redis's hash-max-listpack-value (64 bytes by default), so
  -- that Redis keeps meta a hash table: a pick looks up fields most of
  -- which are absent, and each lookup of a field a listpack lacks scans
  -- all of it. The pool is busy now: its sorted set is made a skiplist
  -- too (keep_skiplist, prepended). meta_closed, after fields went,
  -- deletes a meta left with 'table' and 'due' alone (no member out), so
  -- that the pool's pick is the plain one again.
  meta_opened = function()
    if redis.call('EXISTS', KEYS[4]) == 1 then
      redis.call('HSETNX', KEYS[4], 'due', '-')
      redis.call('HSETNX', KEYS[4], 'table', 'afloat keeps this hash a hash table, not a listpack: no scan per lookup')
      keep_skiplist()
    end
  end
  meta_closed = function()
    local n = redis.call('HLEN', KEYS[4])
    if n == 0 or n > 2 then return end
    local x = redis.call('HMGET', KEYS[4], 'table', 'due')
    if (x[1] and 1 or 0) + (x[2] and 1 or 0) == n and (not x[2] or x[2] == '-') then
      redis.call('DEL', KEYS[4])
    end
  end

  -- spec reads m's 'm|' field: its weight (1 if none) and its limit (nil
  -- if none).
  spec = function(v)
    if not v then return 1, nil end
    local w = tonumber(v)
    if w then return w, nil end
    local ws, l = string.match(v, '^(%S+) (.*)$')
    return tonumber(ws), l
  end
  -- set_spec writes m's weight w and limit l (nil for none) in its 'm|'
  -- field, or deletes the field for weight 1 and no limit. The caller
  -- calls meta_opened or meta_closed after.
  set_spec = function(m, w, l)
    if w == 1 and not l then
      redis.call('HDEL', KEYS[4], 'm|' .. m)
    elseif l then
      redis.call('HSET', KEYS[4], 'm|' .. m, w .. ' ' .. l)
    else
      redis.call('HSET', KEYS[4], 'm|' .. m, w)
    end
  end

  -- num writes a number so that Redis reads back the same double: Lua's
  -- own tostring keeps 14 digits only.
  num = function(x) return string.format('%.17g', x) end

  weight = function(m)
    return (spec(redis.call('HGET', KEYS[4], 'm|' .. m)))
  end

  -- put makes m active with count c under weight w.
  put = function(m, c, w)
    redis.call('ZADD', KEYS[1], num(c / w), m)
  end

  -- count of an active member, nil if it is not in KEYS[1].
  active_count = function(m)
    local s = redis.call('ZSCORE', KEYS[1], m)
    if not s then return nil end
    return math.floor(tonumber(s) * weight(m) + 0.5)
  end

  -- take removes m from wherever it is eligible (active or cooling) and
  -- returns its count, or nil if it is neither.
  take = function(m)
    local c = active_count(m)
    if c then
      redis.call('ZREM', KEYS[1], m)
      return c
    end
    if redis.call('ZSCORE', KEYS[3], m) then
      c = tonumber(redis.call('HGET', KEYS[4], 'p|' .. m))
      redis.call('ZREM', KEYS[3], m)
      redis.call('HDEL', KEYS[4], 'p|' .. m, 'F|' .. m)
      -- With no member out, 'due' is '-': a meta with nothing else goes,
      -- and the pool's pick is the plain one again.
      if redis.call('ZCARD', KEYS[3]) == 0 and redis.call('HEXISTS', KEYS[4], 'due') == 1 then
        redis.call('HSET', KEYS[4], 'due', '-')
      end
      meta_closed()
      return c
    end
    return nil
  end

  -- thaw returns every member whose cooldown has ended to the active set.
  -- Each cooldown is returned once, so its cost is paid once: O(log n) per
  -- member, never a scan of the cooling members still out. A full member
  -- (concurrency) is out until the later of its own cooldown and the
  -- deadline of the lease that brings it under its cap: back then, it has
  -- room (that lease is settled by the next script that reclaims).
  -- 'due' says when there can be one: until then, one HGET.
  thaw = function(now)
    local n = redis.call('HGET', KEYS[4], 'due')
    if not n or n == '-' or tonumber(n) > now then return end
    local ms = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
    for _, m in ipairs(ms) do
      local c = take(m)
      put(m, c, weight(m))
    end
    -- KEYS[1] may have been made anew (every member was out).
    if ms[1] then keep_skiplist() end
    local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
    if first[1] then
      redis.call('HSET', KEYS[4], 'due', first[2])
    else
      redis.call('HSET', KEYS[4], 'due', '-')
      meta_closed()
    end
  end

  -- cool_at puts m in KEYS[3] at time s (ms), or moves it there, keeping
  -- 'due' at or before every release: the only way a score goes into
  -- KEYS[3].
  cool_at = function(m, s)
    redis.call('ZADD', KEYS[3], num(s), m)
    local n = redis.call('HGET', KEYS[4], 'due')
    if not n or n == '-' or tonumber(n) > s then
      redis.call('HSET', KEYS[4], 'due', num(s))
      meta_opened()
    end
  end

  -- cool puts the eligible member m aside until the time release (ms), or
  -- keeps the later of two cooldowns. Returns its release time.
  cool = function(m, release)
    local cur = redis.call('ZSCORE', KEYS[3], m)
    if cur then
      local u = redis.call('HGET', KEYS[4], 'F|' .. m)
      if u and tonumber(u) < release then
        redis.call('HSET', KEYS[4], 'F|' .. m, num(release)) -- full, and now cooling too
      end
      if tonumber(cur) >= release then return tonumber(cur) end
      cool_at(m, release)
      return release
    end
    local c = take(m)
    redis.call('HSET', KEYS[4], 'p|' .. m, num(c))
    cool_at(m, release)
    return release
  end

  exists_pool = function()
    return redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[3]) > 0
  end

  -- bump counts one assignment of the active member m and spends its
  -- rate limit, if it has one (pool_pick does the same inline).
  bump = function(m)
    local x = redis.call('HMGET', KEYS[4], 'm|' .. m, 't|' .. m)
    local w, l = spec(x[1])
    if w == 1 then
      redis.call('ZINCRBY', KEYS[1], 1, m)
    else
      local c = math.floor(tonumber(redis.call('ZSCORE', KEYS[1], m)) * w + 0.5) + 1
      redis.call('ZADD', KEYS[1], num(c / w), m)
    end
    if l then spend(m, l, x[2]) end
  end

  -- spend takes one request from m's rate limit l (from 'm|'..m: the
  -- interval between requests in ms, the burst, the rate and its period in ms;
  -- tat, 't|'..m, the theoretical arrival time: GCRA on the clock); a
  -- member left with no room is cooled until it has room again, so that
  -- picks skip it at no cost and it comes back by itself.
  spend = function(m, l, tat)
    local ts, bs = string.match(l, '^(%S+) (%S+)')
    local t, burst = tonumber(ts), tonumber(bs)
    local now = now_ms()
    local next_tat = math.max(tonumber(tat) or now, now) + t
    redis.call('HSET', KEYS[4], 't|' .. m, num(next_tat))
    local free = math.ceil(next_tat - (burst - 1) * t)
    if free > now then cool(m, free) end
  end

  -- none_ready answers a pick that finds no member ready: the last
  -- resort's member, or nil and what the script returns instead. first:
  -- the first cooling member and its release, if the caller has read it
  -- since the last change.
  none_ready = function(first)
    first = first or redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
    if not first[1] then
      if redis.call('EXISTS', KEYS[2]) == 0 then
        return nil, redis.error_reply('AFLOAT_UNKNOWN_POOL')
      end
      return nil, false
    end
    if redis.call('HGET', KEYS[5], 'last') == 'earliest' then
      -- The member that comes back first takes the pick; it stays cooling.
      redis.call('HINCRBY', KEYS[4], 'p|' .. first[1], 1)
      return first[1]
    end
    return nil, redis.error_reply('AFLOAT_COOLING ' .. first[2])
  end
end

-- pool_pick: the least-used member not cooling (lowest count / weight,
-- ties to the lowest name), counted. Returns the member, or nil and what
-- the script returns instead: false (empty), an error for a pool that
-- never had a member, or AFLOAT_COOLING <ms> when every member is cooling
-- and the pool's last resort is to fail.
-- One HGET of meta's 'due' tells a plain pool (no cooling, no weighted,
-- limited or capped member: each of those has a field in meta, a cooling
-- member its parked count, and meta has 'due' whenever it has one of
-- those); PLAIN keeps the answer for the script's later picks (a
-- batch's): a pick never makes a member weighted, limited or capped, and
-- one that cools a member (its limit) makes the pool busy already.
-- (PLAIN is declared ahead of this file: pick_fast.lua, or lua.go's
-- prelude.) A single pick on a busy pool takes the same steps inline in
-- pick_fast.lua, making no function; this one serves batches, sticky
-- picks, picks with a request id and what pick_fast leaves.
local function pool_pick()
  local due
  if PLAIN == nil then
    due = redis.call('HGET', KEYS[4], 'due')
    PLAIN = not due
  end
  if PLAIN then
    -- No cooling and no weighted member: the seed's pick.
    return pick_one()
  end
  pool_lib()
  -- A batch's later picks, or a pick pick_fast left: 'due' may have moved.
  due = due or redis.call('HGET', KEYS[4], 'due') or '-'
  -- The least active member first, then in one HGET its weight and its
  -- limit: the clock is read only when a member is out or limited, the
  -- cooling set only when 'due' has come (then members may be back, and
  -- the least is looked for again).
  local ms = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local m = ms[1]
  if not m or (due ~= '-' and tonumber(due) <= now_ms()) then
    thaw(now_ms())
    ms = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    m = ms[1]
    if not m then return none_ready() end
  end
  local w, l = spec(redis.call('HGET', KEYS[4], 'm|' .. m))
  if w == 1 then
    redis.call('ZINCRBY', KEYS[1], 1, m)
  else
    -- The count from the score: round(score × weight), exact (see meta).
    local c = math.floor(tonumber(ms[2]) * w + 0.5) + 1
    redis.call('ZADD', KEYS[1], num(c / w), m)
  end
  if l then spend(m, l, redis.call('HGET', KEYS[4], 't|' .. m)) end
  return m
end
