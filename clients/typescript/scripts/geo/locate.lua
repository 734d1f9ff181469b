#!lua flags=no-writes
--- Where `member` is pinned: longitude and latitude (the book's `Location.locate`).
---
--- 《Redis 应用实例》 chapter 25: GEOPOS. A member whose pin expired (see `pin.lua`) is
--- not there, as one never pinned.
--- @key places zset <key>                 the geo set (the book's key)
--- @key deadlines zset {<key>}:deadlines  member -> when its pin expires (ms, server clock)
--- @arg member string non-empty    the member
--- @return (float?, float?)   longitude and latitude; nil and nil when it is not pinned
--- @error BAD_ARGS            not 2 keys and 1 argument
--- @error BAD_MEMBER          empty
--- @error BAD_KEYS            a key not named as its template says
--- @uses live
--- @clock server
--- @complexity O(log N), N = the members
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local places = KEYS[1]
local deadlines = KEYS[2]
local member = ARGV[1]
if member == '' then
  return redis.error_reply('BAD_MEMBER must not be empty')
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
-- O(1) reads that fail with WRONGTYPE whatever is pinned.
redis.call('ZCARD', places)
redis.call('ZCARD', deadlines)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

if not live(places, deadlines, member, now) then
  return { false, false }
end
local position = redis.call('GEOPOS', places, member)[1]
return { position[1], position[2] }
