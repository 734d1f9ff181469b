--- Stores a computed value and drops the computing marker if this call still holds it.
---
--- Beyond the books: the second half of `Cache::get_or_compute` (see `cache/claim.lua`).
--- The value is stored even when the marker's lease ran out (it is still a fresh value);
--- the marker is deleted only when it still holds `token`, so a slow client never drops
--- the marker of a client that claimed after it. A key of another type at `value` or
--- `marker` is refused with WRONGTYPE before anything is written, as `claim` refuses it.
--- @key value string <name>               the cache entry
--- @key marker string {<name>}:computing  the computing marker, in the same hash slot as `value` (`{value}:computing`)
--- @arg token string non-empty    the token the marker was claimed with
--- @arg content bytes             the computed value
--- @arg ttl ms? 1..=10^15-1       time to live; an empty string for no expiry
--- @return bool                   1 when the marker still held `token` (now deleted); 0 when its lease ran out
--- @error BAD_ARGS                not 2 keys and 3 arguments
--- @error BAD_TOKEN               empty
--- @error BAD_TTL                 not whole milliseconds within its range (or empty)
--- @error BAD_KEYS                a key not named as its template says
--- @complexity O(1)
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
if #KEYS ~= 2 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local value = KEYS[1]
local marker = KEYS[2]
local token = ARGV[1]
if token == '' then
  return redis.error_reply('BAD_TOKEN must not be empty')
end
local content = ARGV[2]
local ttl = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if ARGV[3] ~= '' and (not ttl or ttl > 999999999999999) then
  return redis.error_reply(
      'BAD_TTL must be whole milliseconds from 1 to 999999999999999, or empty, got ' .. shown(ARGV[3]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = key_group(value)
if value == '' or not tag_of_keys then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <name>, got ' .. shown(value))
end
if marker ~= tag_of_keys .. ':computing' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:computing with <name> as in value, got ' .. shown(marker))
end
-- End of the generated input checks.
-- Both reads raise WRONGTYPE before the first write.
local held = redis.call('GET', marker) == token
redis.call('STRLEN', value)

if ttl then
  redis.call('SET', value, content, 'PX', ttl)
else
  redis.call('SET', value, content)
end
if held then
  redis.call('DEL', marker)
  return 1
end
return 0
