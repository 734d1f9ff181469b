#!lua flags=no-writes
--- Finds the city of an IPv4 address: the block that starts at or below it, and that block's city, in one step.
---
--- Redis in Action chapter 5 (`find_city_by_ip`): `ZREVRANGEBYSCORE ip2cityid: ip 0 LIMIT 0 1`,
--- then `HGET cityid2city:` of the block's city id, in two round trips. A block's member is
--- `<city id>_<start>` or `<city id>_<start>_<end>` (the book's is `<city id>_<row number>`,
--- and it keeps no end): with an end, an address past it belongs to no block, where the
--- book answers the city of the last block that starts below it.
--- @key blocks zset {<namespace>}:ip2cityid    `<city id>_<start>[_<end>]` -> the block's first address, as an integer
--- @key cities hash {<namespace>}:cityid2city  city id -> the city
--- @arg ip uint 0..=4294967295   the address, as an integer (a.b.c.d is ((a*256+b)*256+c)*256+d)
--- @return (string?, string?) the city id and the city as imported (the book's JSON); nil, nil when no block holds it
--- @error BAD_ARGS            not 2 keys and 1 argument
--- @error BAD_IP              not an integer within its range
--- @error BAD_KEYS            a key not named as its template says
--- @error BAD_BLOCK           the block found is not `<city id>_<start>[_<end>]`
--- @uses safe_integer
--- @complexity O(log N), N = the blocks
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local blocks = KEYS[1]
local cities = KEYS[2]
local ip = ARGV[1] == '0' and 0 or tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not ip or ip > 4294967295 then
  return redis.error_reply('BAD_IP must be an integer from 0 to 4294967295, got ' .. shown(ARGV[1]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(blocks, '^(.+):ip2cityid$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<namespace>}:ip2cityid, got ' .. shown(blocks))
end
if cities ~= tag_of_keys .. ':cityid2city' then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<namespace>}:cityid2city with <namespace> as in blocks, got ' .. shown(cities))
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
if not (first and safe_integer(first, 0, 4294967295) and (last == '' or safe_integer(last, 0, 4294967295))) then
  return redis.error_reply('BAD_BLOCK block ' .. string.format('%q', string.sub(found, 1, 64))
    .. ' is not <city id>_<start>[_<end>]')
end
if last ~= '' and tonumber(last) < ip then
  return { false, false }
end
return { city, redis.call('HGET', cities, city) or false }
