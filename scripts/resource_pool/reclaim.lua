--- Returns resources whose lease ran out to the pool, at most `limit` of them.
---
--- Beyond the book. A client that acquired a resource with a lease and then crashed
--- never releases it; once its lease deadline (server clock) has passed, this moves it
--- from `occupied` back to `available` and forgets its holder's token, so the old
--- holder can no longer release it. `acquire.lua` and `acquire_lease.lua` do the same
--- for a few leases before they pick; call this to tidy a pool nobody acquires from.
--- @key available          the set of resources free to acquire
--- @key occupied           the set of resources held
--- @key leases             sorted set: leased resource -> lease deadline (ms, server clock)
--- @key holders            hash: leased resource -> its holder's token
--- @arg limit uint         the most leases reclaimed in this call, from 1 to 1000
--- @return int             how many resources went back to the pool
--- @error BAD_LIMIT        `limit` is not a whole number from 1 to 1000
--- @clock server
--- @complexity O(log N + M), N = the leases, M = `limit`
local available = KEYS[1]
local occupied = KEYS[2]
local leases = KEYS[3]
local holders = KEYS[4]
local limit = ARGV[1]

if not string.match(limit, '^[1-9]%d*$') or tonumber(limit) > 1000 then
  return redis.error_reply('BAD_LIMIT limit must be a whole number from 1 to 1000, got "' .. limit .. '"')
end
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('SCARD', available)
redis.call('SCARD', occupied)
redis.call('ZCARD', leases)
redis.call('HLEN', holders)

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local expired = redis.call('ZRANGE', leases, '-inf', now, 'BYSCORE', 'LIMIT', 0, tonumber(limit))
for _, resource in ipairs(expired) do
  redis.call('ZREM', leases, resource)
  redis.call('HDEL', holders, resource)
  redis.call('SMOVE', occupied, available, resource)
end
return #expired
