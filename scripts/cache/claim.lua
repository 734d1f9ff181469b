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
--- @key value string                the cache entry
--- @key marker string               the computing marker, in the same hash slot as `value` (`{value}:computing`)
--- @arg token string non-empty      a secret unique to this call: only its holder may fill or release the marker
--- @arg lease ms 1..=10^15-1        how long the marker lasts if its holder never fills it
--- @return (string, bytes?)         the answer and the value: ("hit", value), ("compute", nil) or ("wait", nil)
--- @error BAD_ARGS                  not 2 keys and 2 arguments
--- @error BAD_TOKEN                 `token` is empty
--- @error BAD_LEASE                 `lease` is not whole milliseconds from 1 to 10^15 - 1
--- @complexity O(1)
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `cargo run -p redis-patterns-codegen -- fix <folder>`). A bad call changes nothing.
-- Whether decimal integer a is less than b, both in the one canonical form below: by sign,
-- then length, then in two parts of at most 10 digits, each exact in Lua's numbers, so that
-- 64-bit values compare exactly (and no locale's collation is involved).
local function decimal_less(a, b)
  local a_negative, b_negative = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if a_negative ~= b_negative then
    return a_negative
  end
  if a_negative then
    a, b = string.sub(b, 2), string.sub(a, 2)
  end
  if #a ~= #b then
    return #a < #b
  end
  local a_high, b_high = tonumber(string.sub(a, 1, 10)), tonumber(string.sub(b, 1, 10))
  if a_high ~= b_high then
    return a_high < b_high
  end
  return (tonumber(string.sub(a, 11)) or 0) < (tonumber(string.sub(b, 11)) or 0)
end
-- The one rule for integers: decimal digits, an optional leading '-', no leading zero, and
-- no '+', space, fraction, exponent or hex; within min and max. Returns the text itself.
local function integer(s, min, max)
  if s ~= '0' and not string.match(s, '^%-?[1-9]%d*$') then
    return nil
  end
  if decimal_less(s, min) or decimal_less(max, s) then
    return nil
  end
  return s
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
if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local value = KEYS[1]
local marker = KEYS[2]
local token = ARGV[1]
if token == '' then
  return redis.error_reply('BAD_TOKEN token must not be empty')
end
local lease = integer(ARGV[2], '1', '999999999999999')
if not lease then
  return redis.error_reply(
      'BAD_LEASE lease must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[2]))
end
lease = tonumber(lease)
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
