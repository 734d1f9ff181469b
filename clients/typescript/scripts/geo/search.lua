#!lua flags=no-writes
--- The members within `radius` km of `member`, nearest first (the book's `Location.search`).
---
--- 《Redis 应用实例》 chapter 25. The book asks GEOSEARCH for `limit` members and removes
--- `member` from the answer, so `member` takes one of the `limit` places, and an unknown
--- member fails with Redis's "could not decode requested zset member". Here `member` and
--- expired pins never take a place, and an unknown member answers UNKNOWN_MEMBER.
--- @key places zset <key>                 the geo set (the book's key)
--- @key deadlines zset {<key>}:deadlines  member -> when its pin expires (ms, server clock)
--- @arg member string non-empty    the member searched around
--- @arg radius float          km, more than 0 and at most 20037.5 (half the Earth's circumference)
--- @arg limit uint 1..=100    the most members answered
--- @return [(string, float)]  member and km, nearest first
--- @error BAD_ARGS            not 2 keys and 3 arguments
--- @error BAD_MEMBER          empty
--- @error BAD_RADIUS          not a finite decimal number, or not above 0 and at most 20037.5
--- @error BAD_LIMIT           not an integer within its range
--- @error BAD_KEYS            a key not named as its template says
--- @error UNKNOWN_MEMBER      `member` is not pinned, or its pin expired
--- @uses live nearest shown
--- @clock server
--- @complexity O(N + log M), N = the members in the radius' bounding box, M = the members
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; geo/_shared.lua of the scripts folder).
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
-- Whether `who` is pinned in `places_set` and its pin has not expired by `now`.
local function live(places_set, deadlines_set, who, now)
  if not redis.call('ZSCORE', places_set, who) then
    return false
  end
  local deadline = redis.call('ZSCORE', deadlines_set, who)
  return not deadline or tonumber(deadline) > now
end
-- The members within `km` of `from`, nearest first, as a flat list of member and
-- distance: at most `most`, leaving out `from` and pins expired by `now`. Asks for as
-- many more as pins have expired, so that neither takes one of the `most` places.
local function nearest(places_set, deadlines_set, from, km, most, now)
  local expired = redis.call('ZCOUNT', deadlines_set, '-inf', now)
  local found = redis.call('GEOSEARCH', places_set, 'FROMMEMBER', from, 'BYRADIUS', km, 'km',
    'ASC', 'COUNT', most + 1 + expired, 'WITHDIST')
  local out = {}
  for _, hit in ipairs(found) do
    if #out >= 2 * most then
      break
    end
    local who = hit[1]
    local deadline = redis.call('ZSCORE', deadlines_set, who)
    if who ~= from and (not deadline or tonumber(deadline) > now) then
      out[#out + 1] = who
      out[#out + 1] = hit[2]
    end
  end
  return out
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local places = KEYS[1]
local deadlines = KEYS[2]
local member = ARGV[1]
if member == '' then
  return redis.error_reply('BAD_MEMBER must not be empty')
end
local radius = float(ARGV[2])
if not radius then
  return redis.error_reply(
      'BAD_RADIUS must be a finite decimal number (such as 1.5, -2, 1e+20, 1e-07 or 1.0E16), got ' .. shown(ARGV[2]))
end
local limit = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not limit or limit > 100 then
  return redis.error_reply('BAD_LIMIT must be an integer from 1 to 100, got ' .. shown(ARGV[3]))
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
if radius <= 0 or radius > 20037.5 then
  return redis.error_reply('BAD_RADIUS radius must be a number above 0 and at most 20037.5, got ' .. ARGV[2])
end
-- O(1) reads that fail with WRONGTYPE whatever is pinned.
redis.call('ZCARD', places)
redis.call('ZCARD', deadlines)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

if not live(places, deadlines, member, now) then
  return redis.error_reply('UNKNOWN_MEMBER ' .. shown(member) .. ' is not pinned, or its pin expired')
end
-- Pairs of member and km, as `[(string, float)]` says.
local flat, found = nearest(places, deadlines, member, string.format('%.17g', radius), limit, now), {}
for i = 1, #flat, 2 do
  found[#found + 1] = { flat[i], flat[i + 1] }
end
return found
