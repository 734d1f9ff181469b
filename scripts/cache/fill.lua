--- Stores a computed value and drops the computing marker if this call still holds it.
---
--- Beyond the books: the second half of `Cache::get_or_compute` (see `cache/claim.lua`).
--- The value is stored even when the marker's lease ran out (it is still a fresh value);
--- the marker is deleted only when it still holds `token`, so a slow client never drops
--- the marker of a client that claimed after it.
--- @key value          the cache entry, a string
--- @key marker         the computing marker, in the same hash slot as `value` (`{value}:computing`)
--- @arg token string   the token the marker was claimed with
--- @arg content string the computed value
--- @arg ttl string     time to live in whole milliseconds, from 1 to 10^15 - 1; an empty string for no expiry
--- @return bool        1 when the marker still held `token` (and is now deleted); 0 when its lease had run out
--- @error BAD_TOKEN    `token` is empty
--- @error BAD_TTL      `ttl` is neither empty nor whole milliseconds from 1 to 10^15 - 1
--- @complexity O(1)
local value = KEYS[1]
local marker = KEYS[2]
local token = ARGV[1]
local content = ARGV[2]
local ttl = ARGV[3]

if token == '' then
  return redis.error_reply('BAD_TOKEN token must not be empty')
end
if ttl ~= '' and (not string.match(ttl, '^%d+$') or not string.match(ttl, '[1-9]') or #ttl > 15) then
  return redis.error_reply('BAD_TTL ttl must be empty or whole milliseconds from 1 to 10^15 - 1, got "' .. ttl .. '"')
end

if ttl == '' then
  redis.call('SET', value, content)
else
  redis.call('SET', value, content, 'PX', ttl)
end
if redis.call('GET', marker) == token then
  redis.call('DEL', marker)
  return 1
end
return 0
