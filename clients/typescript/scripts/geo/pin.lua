--- Pins `member` at a position, for ever or for `ttl` (the book's `Location.pin`).
---
--- 《Redis 应用实例》 chapter 25. The book's pin is one GEOADD. Beyond the book, a pin may
--- last `ttl` only ("last seen"): its deadline goes in `deadlines`, every read of this
--- family leaves out a member whose deadline has passed, and each pin deletes up to 10
--- such members (`purge.lua` deletes more). A pin with no `ttl` lasts until the member
--- is pinned again.
--- @key places zset <key>                 the geo set (the book's key)
--- @key deadlines zset {<key>}:deadlines  member -> when its pin expires (ms, server clock)
--- @arg member string non-empty    the member, a user id
--- @arg longitude float       degrees, from -180 to 180
--- @arg latitude float        degrees, from -85.05112878 to 85.05112878
--- @arg ttl ms? 1..=10^15-1   how long the pin lasts; empty for ever
--- @return nil                 nothing
--- @error BAD_ARGS            not 2 keys and 4 arguments
--- @error BAD_MEMBER          empty
--- @error BAD_LONGITUDE       not a finite decimal number, or not from -180 to 180
--- @error BAD_LATITUDE        not a finite decimal number, or not from -85.05112878 to 85.05112878
--- @error BAD_TTL             not whole milliseconds within its range (or empty)
--- @error BAD_KEYS            a key not named as its template says
--- @clock server
--- @complexity O(log N), N = the members
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
-- The one rule for floats: decimal digits with an optional leading '-', then an optional
-- fraction and an optional exponent (`e` or `E`, an optional sign, digits), as Python,
-- JavaScript, Java, Go and C print floats (1e+16, 1e-07, 1.0E16); no leading zero, '+'
-- before the number, space, hex, inf or nan.
local function float(s)
  local whole, fraction, exponent = string.match(s, '^%-?(%d+)(%.?%d*)(.*)$')
  if not whole or (#whole > 1 and string.sub(whole, 1, 1) == '0') or fraction == '.' then
    return nil
  end
  if exponent ~= '' and not string.match(exponent, '^[eE][%+%-]?%d+$') then
    return nil
  end
  local n = tonumber(s)
  if n ~= n or n == math.huge or n == -math.huge then
    return nil
  end
  return n
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
-- The hash tag group that a template's `{…}` makes of value `s`: `s` itself when it holds a
-- hash tag (a `{`, then the first `}` after it, with at least one byte between), else `s` in
-- braces; nil for an empty value, or one with a `}` but no hash tag.
local function key_group(s)
  if string.find(s, '^[^{]*{[^}]+}') then
    return s
  end
  if s ~= '' and not string.find(s, '}', 1, true) then
    return '{' .. s .. '}'
  end
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 4 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 4 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local places = KEYS[1]
local deadlines = KEYS[2]
local member = ARGV[1]
if member == '' then
  return redis.error_reply('BAD_MEMBER must not be empty')
end
local longitude = float(ARGV[2])
if not longitude then
  return redis.error_reply(
      'BAD_LONGITUDE must be a finite decimal number (such as 1.5, -2, 1e+20, 1e-07 or 1.0E16), got ' ..
      shown(ARGV[2]))
end
local latitude = float(ARGV[3])
if not latitude then
  return redis.error_reply(
      'BAD_LATITUDE must be a finite decimal number (such as 1.5, -2, 1e+20, 1e-07 or 1.0E16), got ' ..
      shown(ARGV[3]))
end
local ttl = tonumber(string.match(ARGV[4], '^[1-9]%d*$'))
if ARGV[4] ~= '' and (not ttl or ttl > 999999999999999) then
  return redis.error_reply(
      'BAD_TTL must be whole milliseconds from 1 to 999999999999999, or empty, got ' .. shown(ARGV[4]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = key_group(places)
if places == '' or not tag_of_keys then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <key>, got ' .. shown(places))
end
if deadlines ~= tag_of_keys .. ':deadlines' then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<key>}:deadlines with <key> as in places, got ' .. shown(deadlines))
end
-- End of the generated input checks.
if longitude < -180 or longitude > 180 then
  return redis.error_reply('BAD_LONGITUDE longitude must be a number from -180 to 180, got ' .. ARGV[2])
end
if latitude < -85.05112878 or latitude > 85.05112878 then
  return redis.error_reply('BAD_LATITUDE latitude must be a number from -85.05112878 to 85.05112878, got ' .. ARGV[3])
end
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', places)
redis.call('ZCARD', deadlines)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

redis.call('GEOADD', places, string.format('%.17g', longitude), string.format('%.17g', latitude), member)
if ttl then
  redis.call('ZADD', deadlines, now + ttl, member)
else
  redis.call('ZREM', deadlines, member)
end
-- A few expired pins go with each pin, so the set stays trimmed as it is written.
local expired = redis.call('ZRANGE', deadlines, '-inf', now, 'BYSCORE', 'LIMIT', 0, 10)
if #expired > 0 then
  redis.call('ZREM', places, unpack(expired))
  redis.call('ZREM', deadlines, unpack(expired))
end
return nil
