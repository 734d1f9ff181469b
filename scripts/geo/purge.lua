--- Deletes up to `limit` members whose pin expired; how many it deleted.
---
--- Beyond the book. Reads leave out expired pins, and each pin deletes up to 10 of them;
--- this deletes more, for a set whose members stop pinning. Each call does bounded work.
--- @key places zset           the geo set (the book's key)
--- @key deadlines zset        member -> when its pin expires (ms, server clock)
--- @arg limit uint 1..=1000   the most members deleted
--- @return uint               how many were deleted
--- @error BAD_ARGS            not 2 keys and 1 argument
--- @error BAD_LIMIT           `limit` is not an integer from 1 to 1000
--- @clock server
--- @complexity O(M × log N), N = the members, M = `limit`
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
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local places = KEYS[1]
local deadlines = KEYS[2]
local limit = integer(ARGV[1], '1', '1000')
if not limit then
  return redis.error_reply('BAD_LIMIT limit must be an integer from 1 to 1000, got ' .. shown(ARGV[1]))
end
limit = tonumber(limit)
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', places)
redis.call('ZCARD', deadlines)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local expired = redis.call('ZRANGE', deadlines, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
if #expired > 0 then
  redis.call('ZREM', places, unpack(expired))
  redis.call('ZREM', deadlines, unpack(expired))
end
return #expired
