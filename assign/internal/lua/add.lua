-- add: members join the pool with an agreed count, never overwriting one
-- already there (ZADD NX), and a removed member stays removed (restore
-- brings it back under a policy).
-- KEYS[1] active sorted set, KEYS[2] removed hash
-- ARGV[1] 'count' or 'min' (start at the active members' current minimum,
--         or at ARGV[2] when there are none); ARGV[2] the count;
-- ARGV[3..] the members
-- Returns {added, already active, removed}.
local start = tonumber(ARGV[2])
if ARGV[1] == 'min' then
  local lo = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]
  if lo then start = tonumber(lo) end
end
local added, active, removed = 0, 0, 0
for i = 3, #ARGV do
  if redis.call('HEXISTS', KEYS[2], ARGV[i]) == 1 then
    removed = removed + 1
  elseif redis.call('ZADD', KEYS[1], 'NX', start, ARGV[i]) == 1 then
    added = added + 1
  else
    active = active + 1
  end
end
return {added, active, removed}
