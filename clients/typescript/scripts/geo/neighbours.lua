--- A random member within 1 km of `member`, from a cache of its neighbours (the book's `cached_random_neighbour`).
---
--- 《Redis 应用实例》 chapter 25. The book reads the cache, and on a miss builds it in a
--- transaction: two clients that miss at once both build it, and a member with no
--- neighbours is never cached (the empty result deletes the key), so every call for a
--- lonely member searches again. Here the read and the build are one step: a miss is
--- computed once, and "no neighbours" is cached too (as the member '' alone, which no
--- member can be). The cache holds the `limit` nearest, leaving out `member` and expired
--- pins, for `ttl`; a pin that expires within it may still be picked.
--- @key places zset <key>                       the geo set (the book's key)
--- @key deadlines zset {<key>}:deadlines        member -> when its pin expires (ms, server clock)
--- @key cache zset {<key>}:neighbours:<member>  cached neighbours -> km (the book's `Location:<user>:neighbours`)
--- @arg member string non-empty    the member searched around
--- @arg limit uint 1..=100    how many of the nearest are cached
--- @arg ttl ms 1..=10^15-1    how long the cache lasts (the book's is 60 s)
--- @return string?            a neighbour; nil when there is none
--- @error BAD_ARGS            not 3 keys and 3 arguments
--- @error BAD_MEMBER          empty
--- @error BAD_LIMIT           not an integer within its range
--- @error BAD_TTL             not whole milliseconds within its range
--- @error BAD_KEYS            a key not named as its template says
--- @error UNKNOWN_MEMBER      `member` is not pinned, or its pin expired
--- @uses live nearest shown
--- @clock server
--- @complexity O(1) on a hit; O(N + log M) on a miss, N = the members within 1 km's bounding box, M = the members
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; geo/_shared.lua of the scripts folder).
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
if #KEYS ~= 3 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local places = KEYS[1]
local deadlines = KEYS[2]
local cache = KEYS[3]
local member = ARGV[1]
if member == '' then
  return redis.error_reply('BAD_MEMBER must not be empty')
end
local limit = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not limit or limit > 100 then
  return redis.error_reply('BAD_LIMIT must be an integer from 1 to 100, got ' .. shown(ARGV[2]))
end
local ttl = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not ttl or ttl > 999999999999999 then
  return redis.error_reply('BAD_TTL must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[3]))
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
if cache ~= tag_of_keys .. ':neighbours:' .. member then
  return redis.error_reply(
      'BAD_KEYS KEYS[3] must be {<key>}:neighbours:<member> with <key> as in places and <member> = ARGV[1], got ' ..
      shown(cache))
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', places)
redis.call('ZCARD', deadlines)
redis.call('ZCARD', cache)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local function pick()
  local neighbour = redis.call('ZRANDMEMBER', cache)
  if neighbour == '' then
    return false
  end
  return neighbour
end

if redis.call('EXISTS', cache) == 1 then
  return pick()
end
if not live(places, deadlines, member, now) then
  return redis.error_reply('UNKNOWN_MEMBER ' .. shown(member) .. ' is not pinned, or its pin expired')
end
local found = nearest(places, deadlines, member, '1', limit, now)
if #found == 0 then
  redis.call('ZADD', cache, 0, '')
else
  local scored = {}
  for i = 1, #found, 2 do
    scored[#scored + 1] = found[i + 1]
    scored[#scored + 1] = found[i]
  end
  redis.call('ZADD', cache, unpack(scored))
end
redis.call('PEXPIRE', cache, ttl)
return pick()
