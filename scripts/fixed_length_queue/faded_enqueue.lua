--- Appends `items` and trims the queue to its newest `max_length` items.
---
--- 《Redis 应用实例》 chapter 27 (`FadedQueue.enqueue`): the queue keeps its newest items,
--- so old ones fade out as new ones arrive. The book's MULTI/RPUSH/LTRIM/EXEC returns
--- `min(len(items), max_length)` computed in the client; here both counts come from the
--- list. When more than `max_length` items are passed, only the last `max_length` are
--- pushed. `evicted` counts the items that were queued before this call and were cut: at
--- most 5,000 per call, so that one call stays short (a queue that other writers filled
--- far beyond `max_length` shrinks over several calls).
--- @key queue list                    the list; items are appended on the right, taken from the left
--- @arg max_length uint 1..=10^15-1   the most items the queue holds
--- @arg items bytes...  1..=5000     the items to append, in order
--- @return (int, int)                 `{kept, evicted}`: the last `kept` items were appended; `evicted` old ones cut
--- @error BAD_ARGS                    not 1 key, and `max_length` and from 1 to 5,000 items
--- @error BAD_MAX_LENGTH              `max_length` is not an integer from 1 to 10^15 - 1
--- @complexity O(M + E), M = the number of items, E = the items evicted (at most 5,000)
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `cargo run -p redis-patterns-codegen -- fix <folder>`). A bad call changes nothing.
-- Whether decimal integer a is less than b, both in the one canonical form below: by sign,
-- then length, then in two parts of at most 10 digits, each exact in Lua's numbers, so that
-- 64-bit values compare exactly (and no locale's collation is involved).
local function decimal_less(a, b)
  local a_negative, b_negative = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if a_negative ~= b_negative then
    return a_negative
  end
  if a_negative then
    a, b = string.sub(b, 2), string.sub(a, 2)
  end
  if #a ~= #b then
    return #a < #b
  end
  local a_high, b_high = tonumber(string.sub(a, 1, 10)), tonumber(string.sub(b, 1, 10))
  if a_high ~= b_high then
    return a_high < b_high
  end
  return (tonumber(string.sub(a, 11)) or 0) < (tonumber(string.sub(b, 11)) or 0)
end
-- The one rule for integers: decimal digits, an optional leading '-', no leading zero, and
-- no '+', space, fraction, exponent or hex; within min and max. Returns the text itself.
local function integer(s, min, max)
  if s ~= '0' and not string.match(s, '^%-?[1-9]%d*$') then
    return nil
  end
  if decimal_less(s, min) or decimal_less(max, s) then
    return nil
  end
  return s
end
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
if #KEYS ~= 1 or #ARGV < 2 or #ARGV > 5001 then
  return redis.error_reply('BAD_ARGS expected 1 key and from 2 to 5001 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local queue = KEYS[1]
local max_length = integer(ARGV[1], '1', '999999999999999')
if not max_length then
  return redis.error_reply(
      'BAD_MAX_LENGTH max_length must be an integer from 1 to 999999999999999, got ' .. shown(ARGV[1]))
end
max_length = tonumber(max_length)
-- End of the generated input checks.
local TRIM_LIMIT = 5000

-- Only the last `kept` items can survive the trim: ARGV[#ARGV - kept + 1 .. #ARGV].
-- Pushed in batches, since unpack() of a long list would overflow Lua's stack.
local kept = math.min(#ARGV - 1, max_length)
local length = redis.call('LLEN', queue)
for i = #ARGV - kept + 1, #ARGV, 1000 do
  length = redis.call('RPUSH', queue, unpack(ARGV, i, math.min(i + 999, #ARGV)))
end

local evicted = 0
if length > max_length then
  evicted = math.min(length - max_length, TRIM_LIMIT)
  redis.call('LTRIM', queue, evicted, -1)
end
return { kept, evicted }
