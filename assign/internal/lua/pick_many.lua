-- pick_many: ARGV[1] of the pool's least-used picks (pool_pick,
-- prepended) in a row, in one atomic step: the same members, in the same
-- order, as that many single picks made back to back with nothing between them. Calling a script is
-- most of what a single pick costs the server, so a batch pays it once.
-- KEYS[1..5] the pool (pool_common); the clock is read once, so every
-- pick of the batch sees the same instant
-- ARGV[1] how many picks, 1 to 256: the client splits larger batches, so
--         that one call never holds the server for long
-- Returns the members picked, in order. A pick that finds no member (a
-- pool empty, every member cooling: a rate limit can cool members during
-- the batch) ends it: its answer (false, or an error) is the last element
-- of the list, after the picks made before it, which stay counted.
local n = tonumber(ARGV[1])
if not n or n < 1 or n > 256 or n % 1 ~= 0 then
  return redis.error_reply('ERR pick_many: ARGV[1] ' .. tostring(ARGV[1]) .. ': want 1 to 256 picks')
end
local out = {}
for i = 1, n do
  local m, none = pool_pick()
  if not m then
    out[i] = none
    return out
  end
  out[i] = m
end
return out
