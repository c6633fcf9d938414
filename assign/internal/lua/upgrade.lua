-- upgrade: a pool written by afloat before meta's 'due' and 'm|' fields
-- (a weight in 'w|'..m, a limit in 'l|'..m, 'next' only while a member
-- was out) brought to today's layout (pool_common), in one atomic step.
-- The client runs it before its first script on a pool, and again after
-- the server lost its scripts (a restart may have loaded an older
-- snapshot): a plain pool's pick tells it from a pool with no meta only
-- by 'due', so the conversion cannot wait for a script to meet an old
-- field. Run on a pool of today's layout, it changes nothing but the
-- encoding of a busy pool's sorted set (keep_skiplist, prepended), which
-- a restart may have made a listpack again.
-- KEYS[1..5] the pool (pool_common)
-- Returns 1 if it converted the pool, 0 if there was nothing to convert.
if redis.call('HEXISTS', KEYS[4], 'due') == 1 then
  keep_skiplist()
  return 0
end
local kv = redis.call('HGETALL', KEYS[4])
if #kv == 0 then return 0 end
-- Today's layout has a meta without 'due' only for leases in flight of
-- members with no cap ('f|'..m), which no pick reads: left so.
local ws, ls, old = {}, {}, false
for i = 1, #kv, 2 do
  local k, m = string.match(kv[i], '^([wl])|(.*)$')
  if k == 'w' then ws[m] = kv[i + 1] elseif k == 'l' then ls[m] = kv[i + 1] end
  old = old or string.sub(kv[i], 1, 2) ~= 'f|'
end
if not old then return 0 end
for i = 1, #kv, 2 do
  local k, m = string.match(kv[i], '^([wl])|(.*)$')
  if k then
    local w, l = ws[m] or '1', ls[m]
    if l then
      redis.call('HSET', KEYS[4], 'm|' .. m, w .. ' ' .. l)
    else
      redis.call('HSET', KEYS[4], 'm|' .. m, w)
    end
    redis.call('HDEL', KEYS[4], kv[i])
  end
end
-- 'due' is exact from the cooling set itself (a pool older than 'next'
-- had none).
local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
redis.call('HSET', KEYS[4], 'due', first[2] or '-')
redis.call('HDEL', KEYS[4], 'next')
redis.call('HSETNX', KEYS[4], 'table', 'afloat keeps this hash a hash table, not a listpack: no scan per lookup')
keep_skiplist()
return 1
