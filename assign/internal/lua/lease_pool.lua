-- Leases under concurrency caps (prepended, after pool_common, to the
-- scripts that open, end or settle them, or bring a member back under
-- its cap; not to the picks, which need none of it).
local lease_idx, room_time, fit, settle, reclaim, reclaim_member
local LEASES, LEASEIDX

-- lease_lib: the helpers of the scripts that open and end leases, which
-- set LEASES and LEASEIDX first.
local function lease_lib()
  pool_lib()
  if settle then return end
  lease_idx = function(m, deadline, id)
    return m .. '\0' .. string.format('%015d', deadline) .. '\0' .. id
  end

  -- room_time: when m, with f leases in flight and cap cap (f >= cap),
  -- has room: one ms after the deadline of the lease whose end brings it
  -- under its cap, the (f - cap + 1)th to end.
  room_time = function(m, f, cap)
    local e = redis.call('ZRANGEBYLEX', LEASEIDX, '[' .. m .. '\0', '(' .. m .. '\1', 'LIMIT', f - cap, 1)[1]
    return tonumber(string.sub(e, #m + 2, #m + 16)) + 1
  end

  -- fit puts m where its leases in flight and its cap say, after either
  -- changed: full (out of KEYS[1], in KEYS[3] until it has room, or its
  -- own cooldown ends if later), or not (back in KEYS[1], or cooling on
  -- for its own cooldown). A removed member stays removed. Its time in
  -- KEYS[3] may move earlier (a lease ended): cool_at keeps 'due' by it.
  fit = function(m, now)
    local x = redis.call('HMGET', KEYS[4], 'k|' .. m, 'f|' .. m, 'F|' .. m)
    local cap, f, u = tonumber(x[1]), tonumber(x[2]) or 0, x[3]
    local full = cap and f >= cap
    if u then
      if full then
        cool_at(m, math.max(tonumber(u), room_time(m, f, cap)))
      elseif tonumber(u) > now then
        redis.call('HDEL', KEYS[4], 'F|' .. m)
        cool_at(m, tonumber(u))
      else
        local c = take(m)
        put(m, c, weight(m))
      end
      return
    end
    if not full then return end
    local s = redis.call('ZSCORE', KEYS[3], m)
    if s then
      redis.call('HSET', KEYS[4], 'F|' .. m, s)
      cool_at(m, math.max(tonumber(s), room_time(m, f, cap)))
    elseif redis.call('ZSCORE', KEYS[1], m) then
      local c = take(m)
      redis.call('HSET', KEYS[4], 'p|' .. m, num(c), 'F|' .. m, '0')
      cool_at(m, room_time(m, f, cap))
    end
  end

  -- settle ends the lease id of m: one less in flight, never below 0,
  -- wherever m is. The caller fits m.
  settle = function(id, m, deadline)
    redis.call('ZREM', LEASES, id .. ' ' .. m)
    redis.call('ZREM', LEASEIDX, lease_idx(m, deadline, id))
    if redis.call('HINCRBY', KEYS[4], 'f|' .. m, -1) <= 0 then
      redis.call('HDEL', KEYS[4], 'f|' .. m)
    end
  end

  -- reclaim settles up to limit leases whose deadline has passed.
  reclaim = function(now, limit)
    local xs = redis.call('ZRANGEBYSCORE', LEASES, '-inf', '(' .. now, 'WITHSCORES', 'LIMIT', 0, limit)
    for i = 1, #xs, 2 do
      local id, m = string.match(xs[i], '^(%d+) (.*)$')
      settle(id, m, tonumber(xs[i + 1]))
      fit(m, now)
    end
    return #xs / 2
  end

  -- reclaim_member settles m's leases whose deadline has passed, then
  -- fits m.
  reclaim_member = function(m, now)
    local es = redis.call('ZRANGEBYLEX', LEASEIDX, '[' .. m .. '\0', '(' .. lease_idx(m, now, ''))
    for _, e in ipairs(es) do
      settle(string.sub(e, #m + 18), m, tonumber(string.sub(e, #m + 2, #m + 16)))
    end
    fit(m, now)
  end
end

