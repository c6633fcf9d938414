    -- The clock of the pool's scripts: Redis's TIME in ms, read once per
    -- script (NOW keeps it), so that every worker's cooldowns end by the
    -- same clock and every decision of one script sees one instant. A
    -- statement, not a function: the pick reads it inline, making no
    -- function (see pick_fast.lua).
    local t = redis.call('TIME')
    NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
