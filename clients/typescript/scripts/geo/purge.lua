--- Deletes up to `limit` members whose pin expired; how many it deleted.
---
--- Beyond the book. Reads leave out expired pins, and each pin deletes up to 10 of them;
--- this deletes more, for a set whose members stop pinning. Each call does bounded work.
--- @key places zset <key>                 the geo set (the book's key)
--- @key deadlines zset {<key>}:deadlines  member -> when its pin expires (ms, server clock)
--- @arg limit uint 1..=1000   the most members deleted
--- @return uint               how many were deleted
--- @error BAD_ARGS            not 2 keys and 1 argument
--- @error BAD_LIMIT           not an integer within its range
--- @error BAD_KEYS            a key not named as its template says
--- @clock server
--- @complexity O(M × log N), N = the members, M = `limit`
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
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local places = KEYS[1]
local deadlines = KEYS[2]
local limit = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not limit or limit > 1000 then
  return redis.error_reply('BAD_LIMIT must be an integer from 1 to 1000, got ' .. shown(ARGV[1]))
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
