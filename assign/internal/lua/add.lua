-- add: members join the pool with an agreed count and weight, never
-- overwriting one already there (active or cooling: count and weight
-- untouched), and a removed member stays removed (restore brings it back
-- under a policy).
-- KEYS[1..5] the pool (pool_common)
-- ARGV[1] 'count' or 'min' (start where the active members' lowest score
--         puts a member of this weight: ceil(score × weight); at ARGV[2]
--         when none is active); ARGV[2] the count; ARGV[3] the weight;
-- ARGV[4..] the members
-- Returns {added, already active, removed}.
pool_lib()
thaw(now_ms()) -- so that 'min' sees the members whose cooldown is over
local w = tonumber(ARGV[3])
local start = tonumber(ARGV[2])
if ARGV[1] == 'min' then
  local lo = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]
  if lo then start = math.ceil(tonumber(lo) * w) end
end
local added, active, removed = 0, 0, 0
for i = 4, #ARGV do
  local m = ARGV[i]
  if redis.call('HEXISTS', KEYS[2], m) == 1 then
    removed = removed + 1
  elseif redis.call('ZSCORE', KEYS[1], m) or redis.call('ZSCORE', KEYS[3], m) then
    active = active + 1
  else
    -- A new member has no 'm|' field yet (remove keeps it: a removed
    -- member stays removed here).
    if w ~= 1 then set_spec(m, w, nil) end
    put(m, start, w)
    added = added + 1
  end
end
if w ~= 1 then meta_opened() else keep_skiplist() end
return {added, active, removed}
