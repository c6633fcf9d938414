-- pick_sticky: the member a key picked before, while it is active and not
-- cooling, counted again; else the least-used (pool_pick), which the key
-- then keeps. The record lives ARGV[1] ms from its last use (sessions
-- that stay busy stay on their member).
-- KEYS[1..5] the pool (pool_common), KEYS[6] the key's record
local m = redis.call('GET', KEYS[6])
if m then
  pool_lib()
  thaw(now_ms())
  if redis.call('ZSCORE', KEYS[1], m) then
    bump(m)
    redis.call('PEXPIRE', KEYS[6], ARGV[1])
    return m
  end
end
local none
m, none = pool_pick()
if not m then return none end
redis.call('SET', KEYS[6], m, 'PX', ARGV[1])
return m
