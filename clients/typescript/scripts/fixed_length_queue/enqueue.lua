--- Appends as many of `items` as fit under `max_length`; the queue keeps its oldest items.
---
--- 《Redis 应用实例》 chapter 27 (`FixedLengthQueue.enqueue`). The book's
--- MULTI/RPUSH/LTRIM/EXEC pushes every item and then trims the tail away; this script
--- reads the length first and pushes only the items that fit, and both counts it returns
--- come from the list itself. Items that do not fit are dropped: the first ones are kept.
--- If the queue already holds more than `max_length` items (written by other means, or
--- a smaller `max_length`), its newest items are trimmed first, as the book's LTRIM does,
--- at most 5,000 of them per call so that one call stays short, and counted as
--- `trimmed`; otherwise `trimmed` is 0.
--- @key queue list <key>              the list; items are appended on the right, taken from the left
--- @arg max_length uint 1..=10^15-1   the most items the queue holds
--- @arg items bytes...  1..=5000     the items to append, in order
--- @return (int, int)                 `{kept, trimmed}`: the first `kept` items were appended; `trimmed` old ones cut
--- @error BAD_ARGS                    not 1 key and from 2 to 5001 arguments
--- @error BAD_MAX_LENGTH              not an integer within its range
--- @error BAD_KEYS                    a key not named as its template says
--- @complexity O(M + T), M = the number of items, T = the items trimmed (at most 5,000)
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
if #KEYS ~= 1 or #ARGV < 2 or #ARGV > 5001 then
  return redis.error_reply('BAD_ARGS expected 1 key and from 2 to 5001 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local queue = KEYS[1]
local max_length = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not max_length or max_length > 999999999999999 then
  return redis.error_reply('BAD_MAX_LENGTH must be an integer from 1 to 999999999999999, got ' .. shown(ARGV[1]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
if queue == '' then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <key>, got ' .. shown(queue))
end
-- End of the generated input checks.
local TRIM_LIMIT = 5000

local length = redis.call('LLEN', queue)
local trimmed = 0
if length > max_length then
  trimmed = math.min(length - max_length, TRIM_LIMIT)
  redis.call('LTRIM', queue, 0, length - trimmed - 1)
  length = length - trimmed
end

-- The items are ARGV[2 .. kept + 1]; pushed in batches, since unpack() of a long list
-- would overflow Lua's stack.
local kept = math.max(0, math.min(#ARGV - 1, max_length - length))
for i = 2, kept + 1, 1000 do
  redis.call('RPUSH', queue, unpack(ARGV, i, math.min(i + 999, kept + 1)))
end
return { kept, trimmed }
