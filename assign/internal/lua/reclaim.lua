-- reclaim: settle up to ARGV[1] leases whose deadline has passed.
return reclaim(now_ms(), tonumber(ARGV[1]))
