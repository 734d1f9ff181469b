--- Sets one counter of a hash to `value` and returns the value it held before.
---
--- 《Redis 应用实例》 chapter 6 (`HashCounter.reset`). The book's MULTI/HGET/HSET/EXEC is
--- atomic but cannot look at the old value before writing; this script refuses to
--- overwrite a field that does not hold an integer, so a typo'd key never loses data.
--- The old value comes back as the decimal string Redis stores, so even values beyond
--- 2^53 round-trip exactly.
--- @key counters hash <key>           the hash of counters
--- @arg field string                  the counter's field in the hash
--- @arg value int -2^63..=2^63-1      the new value
--- @return decimal                    the old value; "0" when the field was missing
--- @error BAD_ARGS                    not 1 key and 2 arguments
--- @error BAD_VALUE                   not an integer within its range
--- @error BAD_KEYS                    a key not named as its template says
--- @error NOT_INTEGER                 the field holds something that is not an integer; nothing was written
--- @uses integer shown
--- @complexity O(1)
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
if #KEYS ~= 1 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 1 key and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local counters = KEYS[1]
local field = ARGV[1]
local value = integer(ARGV[2], '-9223372036854775808', '9223372036854775807')
if not value then
  return redis.error_reply('BAD_VALUE must be an integer from -2^63 to 2^63-1, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
if counters == '' then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <key>, got ' .. shown(counters))
end
-- End of the generated input checks.
local old = redis.call('HGET', counters, field)
-- What HINCRBY would refuse too (`007`, `1.5`, ...) is not a counter.
if old and not integer(old, '-9223372036854775808', '9223372036854775807') then
  return redis.error_reply('NOT_INTEGER the field holds ' .. shown(old) .. ', not an integer')
end

redis.call('HSET', counters, field, value)
return old or '0'
