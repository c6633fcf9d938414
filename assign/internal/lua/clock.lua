  -- The clock of the pool's scripts: Redis's TIME in ms, read once per
  -- script, so that every worker's cooldowns end by the same clock and
  -- every decision of one script sees one instant.
  now_ms = function()
    if not NOW then
      local t = redis.call('TIME')
      NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    return NOW
  end
