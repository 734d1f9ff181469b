#!lua flags=no-writes
--- How many members are pinned, leaving out expired pins (the book's `Location.size`).
---
--- 《Redis 应用实例》 chapter 25: ZCARD, less the pins that expired and are not purged yet.
--- @key places zset <key>                 the geo set (the book's key)
--- @key deadlines zset {<key>}:deadlines  member -> when its pin expires (ms, server clock)
--- @return uint              the members pinned
--- @error BAD_ARGS            not 2 keys and 0 arguments
--- @error BAD_KEYS            a key not named as its template says
--- @error BAD_DEADLINES       `deadlines` holds more expired pins than `places` holds pins (another client wrote them)
--- @clock server
--- @complexity O(log N), N = the pins with a ttl
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
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
if #KEYS ~= 2 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local places = KEYS[1]
local deadlines = KEYS[2]
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
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local pinned, expired = redis.call('ZCARD', places), redis.call('ZCOUNT', deadlines, '-inf', now)
if expired > pinned then
  return redis.error_reply('BAD_DEADLINES ' .. expired .. ' pins have expired, of ' .. pinned .. ' members pinned')
end
return pinned - expired
