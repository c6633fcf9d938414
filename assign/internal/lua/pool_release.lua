-- pool_release: end a lease of pool_acquire. A lease released already, or
-- past its deadline (then it is settled here, as a reclaim would), returns
-- 0; an open one 1. The member's room comes back at once.
-- KEYS[1..5] the pool (pool_common), KEYS[6..7] its leases
-- ARGV[1] the lease id, ARGV[2] its member
LEASES, LEASEIDX = KEYS[6], KEYS[7]
lease_lib()
local now = now_ms()
local d = redis.call('ZSCORE', LEASES, ARGV[1] .. ' ' .. ARGV[2])
if not d then return 0 end
d = tonumber(d)
settle(ARGV[1], ARGV[2], d)
fit(ARGV[2], now)
if d < now then return 0 end
return 1
