-- sweep: one step of Delete's sweep of the records a pool keeps under keys
-- of their own — a request id's member (…:req:ID), a failure's outcome
-- (…:failreq:ID), a sticky key's member (…:sticky:KEY) — which no list of
-- the pool names: a SCAN of the server's keys by the pool's prefix, each
-- key found deleted unless it is one to keep (the least-in-flight
-- variant's, which are apart from the pool's). The pool's own keys are
-- gone already, so no pick records anything more meanwhile.
-- KEYS[1] a key of the pool: the script runs on the node that holds the
-- pool's slot, which is where SCAN finds its keys on a cluster
-- ARGV[1] the cursor ('0' to start), ARGV[2] the pattern (the pool's
-- prefix, then *), ARGV[3] how many keys the step looks at, ARGV[4..] the
-- keys to keep
-- Returns {the next cursor ('0': done), how many keys the step deleted}.
local keep = {}
for i = 4, #ARGV do
  keep[ARGV[i]] = true
end
local r = redis.call('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', ARGV[3])
local n = 0
for _, k in ipairs(r[2]) do
  if not keep[k] then
    redis.call('DEL', k)
    n = n + 1
  end
end
return {r[1], n}
