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
--- @key value          the cache entry, a string
--- @key marker         the computing marker, in the same hash slot as `value` (`{value}:computing`)
--- @arg token string   a secret unique to this call: only its holder may fill or release the marker
--- @arg lease ms       how long the marker lasts if its holder never fills it, from 1 to 10^15 - 1
--- @return (string, string?) the answer and the value: ("hit", value), ("compute", nil) or ("wait", nil)
--- @error BAD_TOKEN    `token` is empty
--- @error BAD_LEASE    `lease` is not whole milliseconds from 1 to 10^15 - 1
--- @complexity O(1)
local value = KEYS[1]
local marker = KEYS[2]
local token = ARGV[1]
local lease = ARGV[2]

if token == '' then
  return redis.error_reply('BAD_TOKEN token must not be empty')
end
if not string.match(lease, '^%d+$') or not string.match(lease, '[1-9]') or #lease > 15 then
  return redis.error_reply('BAD_LEASE lease must be whole milliseconds from 1 to 10^15 - 1, got "' .. lease .. '"')
end

local cached = redis.call('GET', value)
if cached then
  return { 'hit', cached }
end
if redis.call('SET', marker, token, 'NX', 'PX', lease) then
  return { 'compute', false }
end
return { 'wait', false }
