#!lua flags=no-writes
--- Lists a user's live sessions, soonest to expire first, with the time each has left.
---
--- Beyond the book (one session per user). For a "your devices" page: each id can be
--- ended with end.lua. Sessions that have expired but are not yet forgotten are left out.
--- The index is never longer than the largest cap, 1000 (see create.lua).
--- @key sessions zset {<namespace>:<uid>}:sessions  session id -> deadline (ms, server clock)
--- @return [(string, uint)]   each live session: its id and milliseconds left, soonest to expire first
--- @error BAD_ARGS            not 1 key and 0 arguments
--- @clock server
--- @complexity O(log N + M), N = the user's sessions, M = the live ones listed (at most 1000)
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 1 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 1 key and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local sessions = KEYS[1]
-- End of the generated input checks.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local live = redis.call('ZRANGEBYSCORE', sessions, '(' .. string.format('%d', now), '+inf',
  'WITHSCORES', 'LIMIT', 0, 1000)
local rows = {}
for i = 1, #live, 2 do
  -- An integer reply: the time left is whole and below 2^53.
  rows[#rows + 1] = { live[i], tonumber(live[i + 1]) - now }
end
return rows
