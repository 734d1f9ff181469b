--- Sets one counter of a hash to `value` and returns the value it held before.
---
--- 《Redis 应用实例》 chapter 6 (`HashCounter.reset`). The book's MULTI/HGET/HSET/EXEC is
--- atomic but cannot look at the old value before writing; this script refuses to
--- overwrite a field that does not hold an integer, so a typo'd key never loses data.
--- The old value comes back as the decimal string Redis stores, so even values beyond
--- 2^53 round-trip exactly.
--- @key counters          the hash of counters
--- @arg field string      the counter's field in the hash
--- @arg value int         the new value, a signed 64-bit integer
--- @return int            the old value, as a decimal string; "0" when the field was missing
--- @error BAD_VALUE       `value` is not a signed 64-bit integer
--- @error NOT_INTEGER     the field holds something that is not an integer; nothing was written
--- @complexity O(1)
local counters = KEYS[1]
local field = ARGV[1]
local value = ARGV[2]

-- True when s is the decimal form HINCRBY accepts: an optional minus, no leading zeros,
-- and within the signed 64-bit range (compared as strings of equal length).
local function is_int64(s)
  local sign, digits = string.match(s, '^(%-?)(%d+)$')
  if not digits or (#digits > 1 and string.sub(digits, 1, 1) == '0') or (sign == '-' and digits == '0') then
    return false
  end
  if #digits ~= 19 then
    return #digits < 19
  end
  return digits <= (sign == '-' and '9223372036854775808' or '9223372036854775807')
end

if not is_int64(value) then
  return redis.error_reply('BAD_VALUE value must be a signed 64-bit integer, got "' .. value .. '"')
end

local old = redis.call('HGET', counters, field)
if old and not is_int64(old) then
  return redis.error_reply('NOT_INTEGER field "' .. field .. '" holds "' .. old .. '", not an integer')
end

redis.call('HSET', counters, field, value)
return old or '0'
