#!lua flags=no-writes
--- Finds the city of an IPv4 address: the block that starts at or below it, and that block's city, in one step.
---
--- Redis in Action chapter 5 (`find_city_by_ip`): `ZREVRANGEBYSCORE ip2cityid: ip 0 LIMIT 0 1`,
--- then `HGET cityid2city:` of the block's city id, in two round trips. A block's member is
--- `<city id>_<start>` or `<city id>_<start>_<end>` (the book's is `<city id>_<row number>`,
--- and it keeps no end): with an end, an address past it belongs to no block, where the
--- book answers the city of the last block that starts below it.
--- Reply: the city id and the city (as imported: the book's JSON `[city, region, country]`),
--- or nil and nil when no block holds the address.
--- @key blocks zset           `<city id>_<start>[_<end>]` -> the block's first address, as an integer
--- @key cities hash           city id -> the city
--- @arg ip uint 0..=4294967295   the address, as an integer (a.b.c.d is ((a*256+b)*256+c)*256+d)
--- @return (string?, string?) the city id and the city; nil and nil when no block holds the address
--- @error BAD_ARGS            not 2 keys and 1 argument
--- @error BAD_IP              not an integer within its range
--- @error BAD_BLOCK           the block found is not `<city id>_<start>[_<end>]`
--- @complexity O(log N), N = the blocks
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
-- The same rule where min and max are within 2^53 - 1 of 0, on a fast path: there every
-- integer is exact in Lua's numbers, and a longer one rounds to a number out of range.
-- Returns the number.
local function safe_integer(s, min, max)
  local n = (s == '0' or string.match(s, '^%-?[1-9]%d*$')) and tonumber(s)
  if n and n >= min and n <= max then
    return n
  end
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
local blocks = KEYS[1]
local cities = KEYS[2]
local ip = safe_integer(ARGV[1], 0, 4294967295)
if not ip then
  return redis.error_reply('BAD_IP ip must be an integer from 0 to 4294967295, got ' .. shown(ARGV[1]))
end
-- End of the generated input checks.
-- O(1) read that fails with WRONGTYPE before the answer is built.
redis.call('HLEN', cities)
local found = redis.call('ZREVRANGEBYSCORE', blocks, ip, 0, 'LIMIT', 0, 1)[1]
if not found then
  return { false, false }
end
local city, rest = string.match(found, '^([^_]+)_(.+)$')
local first, last = string.match(rest or '', '^(%d+)_(%d+)$')
if not first then
  first, last = string.match(rest or '', '^(%d+)$'), ''
end
if not (first and integer(first, '0', '4294967295') and (last == '' or integer(last, '0', '4294967295'))) then
  return redis.error_reply('BAD_BLOCK block ' .. string.format('%q', string.sub(found, 1, 64))
    .. ' is not <city id>_<start>[_<end>]')
end
if last ~= '' and tonumber(last) < ip then
  return { false, false }
end
return { city, redis.call('HGET', cities, city) or false }
