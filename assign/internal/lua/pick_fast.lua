-- pick_fast: a pick on a plain pool (no cooling, weighted, limited or
-- capped member: no meta) without a request id is the seed's, done here
-- before the rest of the script (pool_common's helpers and pick.lua)
-- makes any of its functions: a Lua function made is an allocation on
-- every run. Anything else — an id, a busy pool, an empty one — falls
-- through to pick.lua, which decides it all again.
-- PLAIN is pool_common's (declared here, ahead of it, in this script), so
-- that the pool's EXISTS is asked once.
local PLAIN
if not KEYS[6] then
  PLAIN = redis.call('EXISTS', KEYS[4]) == 0
  if PLAIN then
    local m = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
    if m then
      redis.call('ZINCRBY', KEYS[1], 1, m)
      return m
    end
  end
end
