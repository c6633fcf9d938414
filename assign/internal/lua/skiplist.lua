-- keep_skiplist: a busy pool's sorted set of active members (KEYS[1]) is
-- made a skiplist, not a listpack (Redis's encoding for a sorted set of
-- up to 128 members of up to 64 bytes): in a listpack, ZADD and ZINCRBY
-- find the member and its new place by a scan that reads every score
-- before it, and a weighted member's score (count / weight, 17 digits)
-- is text to be parsed on each read, so that a busy pick's count cost
-- the server several microseconds more on a pool of 100 members than in
-- a skiplist. A member longer than the listpack's limit (names are at
-- most 512 bytes: this one is longer, so it is never a member) makes
-- Redis convert the set, which it never converts back while it runs;
-- taken out at once, it is never seen. A restart loads the set as a
-- listpack again, so upgrade.lua, which the client runs after the server
-- lost its scripts, calls this too. A plain pool (no meta) is left as it
-- is: its pick is the seed's, on whatever the set is.
-- (A server that answers no encoding, as a Redis-compatible one may not,
-- is left alone: pcall, not call.)
local function keep_skiplist()
  local enc = redis.pcall('OBJECT', 'ENCODING', KEYS[1])
  if type(enc) ~= 'string' or enc == 'skiplist' or redis.call('EXISTS', KEYS[4]) == 0 then return end
  local long = string.rep('afloat keeps this sorted set a skiplist. ', 15)
  if redis.call('ZADD', KEYS[1], 'NX', 0, long) == 1 then
    redis.call('ZREM', KEYS[1], long)
  end
end
