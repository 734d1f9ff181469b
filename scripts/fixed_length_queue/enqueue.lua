--- Appends as many of `items` as fit under `max_length`; the queue keeps its oldest items.
---
--- 《Redis 应用实例》 chapter 27 (`FixedLengthQueue.enqueue`). The book's
--- MULTI/RPUSH/LTRIM/EXEC pushes every item and then trims the tail away; this script
--- reads the length first and pushes only the items that fit, and both counts it returns
--- come from the list itself. Items that do not fit are dropped: the first ones are kept.
--- If the queue already holds more than `max_length` items (written by other means, or
--- a smaller `max_length`), its newest items are trimmed first, as the book's LTRIM does,
--- and counted as `trimmed`; otherwise `trimmed` is 0.
--- @key queue             the list; items are appended on the right, taken from the left
--- @arg max_length uint   the most items the queue holds, from 1 to 10^15 - 1
--- @arg items string...   the items to append, in order; at least one
--- @return (int, int)     `{kept, trimmed}`: the first `kept` items were appended; `trimmed` old ones cut
--- @error BAD_MAX_LENGTH  `max_length` is not a whole number from 1 to 10^15 - 1
--- @error NO_ITEMS        no item was passed
--- @complexity O(M + T), M = the number of items, T = the items trimmed
local queue = KEYS[1]
local max_length = ARGV[1]

-- Digits only (tonumber() would take '1e3' and '0x10'), at most 15 of them.
if not max_length or not string.match(max_length, '^%d+$') or not string.match(max_length, '[1-9]')
    or #max_length > 15 then
  return redis.error_reply('BAD_MAX_LENGTH max_length must be a whole number from 1 to 10^15 - 1, got "'
    .. tostring(max_length) .. '"')
end
max_length = tonumber(max_length)
local count = #ARGV - 1
if count < 1 then
  return redis.error_reply('NO_ITEMS pass at least one item after max_length')
end

local length = redis.call('LLEN', queue)
local trimmed = 0
if length > max_length then
  redis.call('LTRIM', queue, 0, max_length - 1)
  trimmed = length - max_length
  length = max_length
end

-- The items are ARGV[2 .. kept + 1]; pushed in batches, since unpack() of a long list
-- would overflow Lua's stack.
local kept = math.min(count, max_length - length)
for i = 2, kept + 1, 1000 do
  redis.call('RPUSH', queue, unpack(ARGV, i, math.min(i + 999, kept + 1)))
end
return { kept, trimmed }
