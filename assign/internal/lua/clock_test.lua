    -- The tests' clock (never in a script a user's program runs): the
    -- time in ms is the value of the pool's key 'testclock', which the
    -- test sets, so that a property test can step the clock as it steps
    -- its model.
    local k = (string.gsub(KEYS[1], 'counts$', 'testclock'))
    NOW = tonumber(redis.call('GET', k) or '0')
