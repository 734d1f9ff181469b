--- Returns resources whose lease ran out to the pool, at most `limit` of them.
---
--- Beyond the book. A client that acquired a resource with a lease and then crashed
--- never releases it; once its lease deadline (server clock) has passed, this moves it
--- from `occupied` back to `available` and forgets its holder's token, so the old
--- holder can no longer release it. `acquire.lua` and `acquire_lease.lua` do the same
--- for a few leases before they pick; call this to tidy a pool nobody acquires from.
--- @key available set            the set of resources free to acquire
--- @key occupied set             the set of resources held
--- @key leases zset              leased resource -> lease deadline (ms, server clock)
--- @key holders hash             leased resource -> its holder's token
--- @arg limit uint 1..=1000       the most leases reclaimed in this call
--- @return uint                   how many resources went back to the pool
--- @error BAD_ARGS                not 4 keys and 1 argument
--- @error BAD_LIMIT               `limit` is not an integer from 1 to 1000
--- @clock server
--- @complexity O(M × log N), N = the leases, M = `limit`
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
if #KEYS ~= 4 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local available = KEYS[1]
local occupied = KEYS[2]
local leases = KEYS[3]
local holders = KEYS[4]
local limit = integer(ARGV[1], '1', '1000')
if not limit then
  return redis.error_reply('BAD_LIMIT limit must be an integer from 1 to 1000, got ' .. shown(ARGV[1]))
end
limit = tonumber(limit)
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('SCARD', available)
redis.call('SCARD', occupied)
redis.call('ZCARD', leases)
redis.call('HLEN', holders)

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local expired = redis.call('ZRANGE', leases, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
for _, resource in ipairs(expired) do
  redis.call('ZREM', leases, resource)
  redis.call('HDEL', holders, resource)
  redis.call('SMOVE', occupied, available, resource)
end
return #expired
