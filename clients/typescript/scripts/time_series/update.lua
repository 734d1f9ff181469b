--- Counts `count` events at time `now` in a counter, at every precision at once.
---
--- Redis in Action chapter 5 (`update_counter`): for each precision (the book's 1 s, 5 s,
--- 1 min, 5 min, 1 h, 5 h and 1 day), the counter's hash at that precision gains `count` in
--- the field of the slot that holds `now` (the slot's start, in Unix seconds), and the
--- index of known counters lists `<precision>:<name>` (score 0), so a cleaner can find
--- it. The book's MULTI is atomic too; here the same step is one round trip, and a
--- slot that holds no integer, or a count that would overflow it, is refused before any
--- write (a HINCRBY error would stop the book's transaction half done).
--- Time is the caller's (`now`, ms), so tests and backfills count exactly.
--- @key known zset {<namespace>}:known  `<precision>:<name>` of every counter -> 0
--- @key counts... hash 1..=16 {<namespace>}:count:<precision>:<name>  the counter at each of `precision`, in order
--- @arg name string non-empty the counter's name
--- @arg count int -10^15+1..=10^15-1   how many events (negative to take some back)
--- @arg now uint 0..=10^15-1  when they happened (ms, the caller's clock)
--- @arg precision uint... 1..=16 1..=10^9  each precision in seconds, one per hash of `counts`
--- @return decimal            the first precision's slot count, after the update, exact to 64 bits
--- @error BAD_ARGS            not from 2 to 17 keys and from 4 to 19 arguments, or not one precision per key of counts
--- @error BAD_NAME            empty
--- @error BAD_COUNT           not an integer within its range
--- @error BAD_NOW             not an integer within its range
--- @error BAD_PRECISION      a value is not an integer within its range
--- @error BAD_KEYS           a key not named as its template says
--- @error BAD_SAMPLE          a slot holds something other than an integer
--- @error OVERFLOW            a slot would leave the 64-bit integers
--- @uses integer shown
--- @clock caller
--- @complexity O(P log K), P = the precisions (at most 16), K = the known counters
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
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
  -- Up to 15 characters a value is exact in a Lua number, and a bound rounded to one
  -- still falls on the same side of it.
  if #s <= 15 then
    local n = tonumber(s)
    return n >= tonumber(min) and n <= tonumber(max) and s or nil
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS < 2 or #KEYS > 17 or #ARGV < 4 or #ARGV > 19 then
  return redis.error_reply(
      'BAD_ARGS expected from 2 to 17 keys and from 4 to 19 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local known = KEYS[1]
local name = ARGV[1]
if name == '' then
  return redis.error_reply('BAD_NAME must not be empty')
end
local count = ARGV[2] == '0' and 0 or tonumber(string.match(ARGV[2], '^%-?[1-9]%d*$'))
if not count or count < -999999999999999 or count > 999999999999999 then
  return redis.error_reply(
      'BAD_COUNT must be an integer from -999999999999999 to 999999999999999, got ' .. shown(ARGV[2]))
end
local now = ARGV[3] == '0' and 0 or tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not now or now > 999999999999999 then
  return redis.error_reply('BAD_NOW must be an integer from 0 to 999999999999999, got ' .. shown(ARGV[3]))
end
for i = 4, #ARGV do
  local each = tonumber(string.match(ARGV[i], '^[1-9]%d*$'))
  if not each or each > 1000000000 then
    return redis.error_reply(
        'BAD_PRECISION ARGV[' .. i .. '] must be an integer from 1 to 1000000000, got ' .. shown(ARGV[i]))
  end
end
-- The keys, as their templates name them: a value two of them share is the same in both.
if #KEYS - 2 ~= #ARGV - 4 then
  return redis.error_reply(
      'BAD_ARGS expected one precision per key of counts, got ' .. (#KEYS - 1) .. ' and ' .. (#ARGV - 3))
end
local tag_of_keys = string.match(known, '^(.+):known$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<namespace>}:known, got ' .. shown(known))
end
for i = 2, #KEYS do
  if KEYS[i] ~= tag_of_keys .. ':count:' .. ARGV[i + 2] .. ':' .. name then
    return redis.error_reply(
        'BAD_KEYS KEYS[' .. i ..
        '] must be {<namespace>}:count:<precision>:<name> with <namespace> as in known and <precision> from the ' ..
        'precision arguments and <name> = ARGV[1], got ' .. shown(KEYS[i]))
  end
end
-- End of the generated input checks.
-- held + change, exactly, as the decimal HINCRBY will store, or nil when it would leave
-- the 64-bit integers (as HINCRBY refuses). held is an integer's text in the one form,
-- |change| < 10^15: the sum is kept as high * 10^10 + low, 0 <= low < 10^10, each part
-- exact in Lua's numbers.
local function sum(held, change)
  local negative = string.sub(held, 1, 1) == '-'
  local digits = negative and string.sub(held, 2) or held
  local high, low = tonumber(string.sub(digits, 1, -11)) or 0, tonumber(string.sub(digits, -10))
  if negative then
    high, low = -high, -low
  end
  low = low + change
  local carry = math.floor(low / 1e10)
  high, low = high + carry, low - carry * 1e10
  -- 2^63 - 1 = 922337203 * 10^10 + 6854775807; -2^63 = -922337204 * 10^10 + 3145224192.
  if high > 922337203 or (high == 922337203 and low > 6854775807)
      or high < -922337204 or (high == -922337204 and low < 3145224192) then
    return nil
  end
  if high >= 0 then
    return high == 0 and string.format('%d', low) or string.format('%d%010d', high, low)
  end
  -- A negative sum: its magnitude is -high * 10^10 - low.
  if low == 0 then
    return string.format('-%d0000000000', -high)
  end
  high, low = -high - 1, 1e10 - low
  return high == 0 and string.format('-%d', low) or string.format('-%d%010d', high, low)
end

local seconds = math.floor(now / 1000)
local slots, pending = {}, {}
for i = 4, #ARGV do
  local precision = tonumber(ARGV[i])
  local hash, slot = KEYS[i - 2], string.format('%d', math.floor(seconds / precision) * precision)
  -- Checked before any write: HINCRBY would fail half way through.
  -- A slot named twice (one hash passed for two precisions) adds up.
  local held = pending[hash .. ' ' .. slot] or redis.call('HGET', hash, slot) or '0'
  if not integer(held, '-9223372036854775808', '9223372036854775807') then
    return redis.error_reply('BAD_SAMPLE ' .. shown(hash) .. ' ' .. slot .. ' holds ' .. shown(held)
      .. ', not a 64-bit integer')
  end
  local after = sum(held, count)
  if not after then
    return redis.error_reply('OVERFLOW ' .. shown(hash) .. ' ' .. slot .. ' holds ' .. held .. ', and adding '
      .. string.format('%d', count) .. ' would leave the 64-bit integers')
  end
  pending[hash .. ' ' .. slot] = after
  slots[#slots + 1] = { hash, slot, precision, after }
end
redis.call('ZCARD', known)
for i = 1, #slots do
  local hash, slot, precision = slots[i][1], slots[i][2], slots[i][3]
  redis.call('ZADD', known, 0, precision .. ':' .. name)
  redis.call('HINCRBY', hash, slot, count)
end
-- As text: a count beyond 2^53 would lose digits as a Lua number.
return slots[1][4]
