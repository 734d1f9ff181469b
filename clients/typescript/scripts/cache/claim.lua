--- Reads a cached value; on a miss, claims the right to compute it unless another client has.
---
--- Beyond the books: the stampede guard of `Cache::get_or_compute`. 《Redis 应用实例》's
--- cache-aside example (`cache_usage.py`) does GET, then builds the value and SETs it, so
--- every client that misses at the same moment builds it. Here a miss takes a marker
--- (`SET marker token NX PX lease`): the one client that gets it computes the value and
--- stores it with `cache/fill.lua`; the others wait a little and call this script again,
--- until they get a hit, or the marker is gone (the computing client failed and released
--- it, or crashed and its lease ran out) and one of them claims it in turn.
---
--- The answer is "hit" with the cached value; "compute" when this call now holds the
--- marker (compute, then run `cache/fill.lua` with the same token, or on failure release
--- the marker with `identity_lock/release.lua`); "wait" when another call holds it.
--- @key value string <name>               the cache entry
--- @key marker string {<name>}:computing  the computing marker, in the same hash slot as `value` (`{value}:computing`)
--- @arg token string non-empty      a secret unique to this call: only its holder may fill or release the marker
--- @arg lease ms 1..=10^15-1        how long the marker lasts if its holder never fills it
--- @return (string, bytes?)         the answer and the value: ("hit", value), ("compute", nil) or ("wait", nil)
--- @error BAD_ARGS                  not 2 keys and 2 arguments
--- @error BAD_TOKEN                 empty
--- @error BAD_LEASE                 not whole milliseconds within its range
--- @error BAD_KEYS                  a key not named as its template says
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
if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local value = KEYS[1]
local marker = KEYS[2]
local token = ARGV[1]
if token == '' then
  return redis.error_reply('BAD_TOKEN must not be empty')
end
local lease = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not lease or lease > 999999999999999 then
  return redis.error_reply('BAD_LEASE must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[2]))
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
local cached = redis.call('GET', value)
if cached then
  return { 'hit', cached }
end
-- WRONGTYPE here, rather than a marker of another type that never lets anyone compute.
redis.call('STRLEN', marker)
if redis.call('SET', marker, token, 'NX', 'PX', lease) then
  return { 'compute', false }
end
return { 'wait', false }
