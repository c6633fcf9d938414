-- pick_one: the seed's least-used pick, shared by the least-in-flight
-- scripts (prepended to each). KEYS[1] is the sorted set of active members
-- (score = the count), KEYS[2] the hash of removed members' counts (only
-- to tell an empty pool from an unknown one).
-- Returns the member, its count raised by one; or nil and what the script
-- should return instead: false for an empty pool, an error for a pool that
-- never had a member.
local function pick_one()
  -- ZRANGE orders equal scores by member, so ties go to the lowest name.
  local m = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
  if not m then
    if redis.call('EXISTS', KEYS[2]) == 0 then
      return nil, redis.error_reply('AFLOAT_UNKNOWN_POOL')
    end
    return nil, false
  end
  redis.call('ZINCRBY', KEYS[1], 1, m)
  return m
end
