-- pick_many: ARGV[1] of the seed's least-used picks (pick_one, prepended)
-- in a row, in one
-- atomic step: the same members, in the same order, as that many single
-- picks made back to back with nothing between them. Calling a script is
-- most of what a single pick costs the server, so a batch pays it once.
-- KEYS[1] the active members' sorted set (score = assignments)
-- KEYS[2] the hash of removed members' counts (only to tell an empty pool
--         from an unknown one)
-- ARGV[1] how many picks, 1 to 256: the client splits larger batches, so
--         that one call never holds the server for long
-- Returns the members picked, in order; false for an empty pool (picks
-- never remove a member, so a pool is empty for the whole batch or not at
-- all).
local n = tonumber(ARGV[1])
if not n or n < 1 or n > 256 or n % 1 ~= 0 then
  return redis.error_reply('ERR pick_many: ARGV[1] ' .. tostring(ARGV[1]) .. ': want 1 to 256 picks')
end
local out = {}
for i = 1, n do
  local m, none = pick_one()
  if not m then return none end
  out[i] = m
end
return out
