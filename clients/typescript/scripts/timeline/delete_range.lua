--- Deletes the entries of a timeline between two times, a bounded batch at a time.
---
--- The 2011 cookbook's `delete_between_time` is one ZREMRANGEBYSCORE, whose work grows
--- with the entries in the range. Here one call deletes at most `limit` of them, oldest
--- first, and says whether more remain; call again until none do.
--- @key timeline zset <key>   item -> time (ms)
--- @arg min uint 0..=10^15-1  the earliest time deleted (ms, included)
--- @arg max uint 0..=10^15-1  the latest time deleted (ms, included)
--- @arg limit uint 1..=1000   the most entries deleted by this call
--- @return (int, bool)        entries deleted; 1 if the range holds more
--- @error BAD_ARGS            not 1 key and 3 arguments
--- @error BAD_MIN             not an integer within its range
--- @error BAD_MAX             not an integer within its range
--- @error BAD_LIMIT           not an integer within its range
--- @error BAD_KEYS            a key not named as its template says
--- @complexity O(M log N), M = `limit`, N = the length
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
-- A bad argument as an error shows it: its first 32 bytes, other than printable ASCII
-- escaped, and its length when it is longer.
local function shown(s)
  local head = string.gsub(string.sub(s, 1, 32), '[^%w%p ]', function(c)
    return string.format('\\%03d', string.byte(c))
  end)
  if #s > 32 then
    return '"' .. head .. '"... (' .. #s .. ' bytes)'
  end
  return '"' .. head .. '"'
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 1 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 1 key and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local timeline = KEYS[1]
local min = ARGV[1] == '0' and 0 or tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not min or min > 999999999999999 then
  return redis.error_reply('BAD_MIN must be an integer from 0 to 999999999999999, got ' .. shown(ARGV[1]))
end
local max = ARGV[2] == '0' and 0 or tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not max or max > 999999999999999 then
  return redis.error_reply('BAD_MAX must be an integer from 0 to 999999999999999, got ' .. shown(ARGV[2]))
end
local limit = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not limit or limit > 1000 then
  return redis.error_reply('BAD_LIMIT must be an integer from 1 to 1000, got ' .. shown(ARGV[3]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
if timeline == '' then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <key>, got ' .. shown(timeline))
end
-- End of the generated input checks.
local doomed = redis.call('ZRANGEBYSCORE', timeline, min, max, 'LIMIT', 0, limit)
if #doomed > 0 then
  redis.call('ZREM', timeline, unpack(doomed))
end
local more = #doomed == limit and redis.call('ZCOUNT', timeline, min, max) > 0
return { #doomed, more and 1 or 0 }
