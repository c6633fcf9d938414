-- The clock of the pool's scripts: Redis's TIME in ms, read once per
-- script, so that every worker's cooldowns end by the same clock and every
-- decision of one script sees one instant.
local NOW
local function now_ms()
  if not NOW then
    local t = redis.call('TIME')
    NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return NOW
end
