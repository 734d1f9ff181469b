--- Schedules a row to be cached now and again every `delay`, or, with a delay of 0, stops caching it at once.
---
--- Redis in Action chapter 2 (`schedule_row_cache`): the row's delay and its next due
--- time, written together (the book's two commands in two round trips). Scheduling a row
--- again makes it due now with the new delay. A delay of 0 unschedules the row and
--- deletes its cached copy in the same step; the book instead leaves a delay of 0 for a
--- worker to find, and its workers crash on a row with no delay at all.
--- Reply: when the row is next due (ms, server clock); 0 when it was unscheduled.
--- @key delays zset           row id -> delay between two copies (ms)
--- @key schedule zset         row id -> when its next copy is due (ms, server clock)
--- @key copy string           the row's cached copy, deleted when the row is unscheduled
--- @arg row string non-empty  the row id
--- @arg delay ms 0..=10^15-1  how often to cache the row again; 0 to stop caching it
--- @return int                when the row is next due (ms); 0 when unscheduled
--- @error BAD_ARGS            not 3 keys and 2 arguments
--- @error BAD_ROW             `row` is empty
--- @error BAD_DELAY           `delay` is not whole milliseconds from 0 to 10^15 - 1
--- @clock server
--- @complexity O(log N), N = the rows scheduled
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
if #KEYS ~= 3 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local delays = KEYS[1]
local schedule = KEYS[2]
local copy = KEYS[3]
local row = ARGV[1]
if row == '' then
  return redis.error_reply('BAD_ROW row must not be empty')
end
local delay = integer(ARGV[2], '0', '999999999999999')
if not delay then
  return redis.error_reply(
      'BAD_DELAY delay must be whole milliseconds from 0 to 999999999999999, got ' .. shown(ARGV[2]))
end
delay = tonumber(delay)
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', delays)
redis.call('ZCARD', schedule)
redis.call('STRLEN', copy)
if delay == 0 then
  redis.call('ZREM', delays, row)
  redis.call('ZREM', schedule, row)
  redis.call('DEL', copy)
  return 0
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZADD', delays, delay, row)
redis.call('ZADD', schedule, now, row)
return now
