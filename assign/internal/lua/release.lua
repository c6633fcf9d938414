-- release: end a lease. Releasing one already released or reclaimed does
-- nothing and returns 0, so a second release is harmless.
-- ARGV[1] the lease id
if not redis.call('ZSCORE', KEYS[3], ARGV[1]) then return 0 end
settle(ARGV[1])
return 1
