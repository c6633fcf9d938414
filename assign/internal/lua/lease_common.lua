-- Shared by the least-in-flight scripts (prepended to each).
-- KEYS[1] in-flight counts of active members (sorted set)
-- KEYS[2] in-flight counts of removed members (hash)
-- KEYS[3] leases: id → deadline in ms of the server's clock (sorted set)
-- KEYS[4] leases: id → member (hash)
-- KEYS[5] the lease id sequence
-- Redis TIME is the only clock: every worker's leases expire by the same
-- one, whatever the workers' own clocks say.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- settle ends a lease: one less in flight for its member, never below 0,
-- wherever the member is (active or removed, or gone).
local function settle(id)
  local m = redis.call('HGET', KEYS[4], id)
  redis.call('ZREM', KEYS[3], id)
  redis.call('HDEL', KEYS[4], id)
  if not m then return end
  local c = redis.call('ZSCORE', KEYS[1], m)
  if c then
    if tonumber(c) > 0 then redis.call('ZINCRBY', KEYS[1], -1, m) end
    return
  end
  c = redis.call('HGET', KEYS[2], m)
  if c and tonumber(c) > 0 then redis.call('HINCRBY', KEYS[2], m, -1) end
end

-- reclaim settles up to limit leases whose deadline has passed.
local function reclaim(now, limit)
  local ids = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. now, 'LIMIT', 0, limit)
  for _, id in ipairs(ids) do settle(id) end
  return #ids
end
