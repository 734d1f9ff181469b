--- Appends `items` and trims the queue to its newest `max_length` items.
---
--- 《Redis 应用实例》 chapter 27 (`FadedQueue.enqueue`): the queue keeps its newest items,
--- so old ones fade out as new ones arrive. The book's MULTI/RPUSH/LTRIM/EXEC returns
--- `min(len(items), max_length)` computed in the client; here both counts come from the
--- list. When more than `max_length` items are passed, only the last `max_length` are
--- pushed. `evicted` counts the items that were queued before this call and were cut.
--- @key queue             the list; items are appended on the right, taken from the left
--- @arg max_length uint   the most items the queue holds, from 1 to 10^15 - 1
--- @arg items string...   the items to append, in order; at least one
--- @return (int, int)     `{kept, evicted}`: the last `kept` items were appended; `evicted` old ones cut
--- @error BAD_MAX_LENGTH  `max_length` is not a whole number from 1 to 10^15 - 1
--- @error NO_ITEMS        no item was passed
--- @complexity O(M + E), M = the number of items, E = the items evicted
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

-- Only the last `kept` items can survive the trim: ARGV[#ARGV - kept + 1 .. #ARGV].
-- Pushed in batches, since unpack() of a long list would overflow Lua's stack.
local kept = math.min(count, max_length)
local length = 0
for i = #ARGV - kept + 1, #ARGV, 1000 do
  length = redis.call('RPUSH', queue, unpack(ARGV, i, math.min(i + 999, #ARGV)))
end

local evicted = 0
if length > max_length then
  redis.call('LTRIM', queue, -max_length, -1)
  evicted = length - max_length
end
return { kept, evicted }
