--- Takes an available resource and marks it held, with no lease; nil when none is left.
---
--- 《Redis 应用实例》 chapter 10 (`ResourcePool.acquire`). The book picks with
--- SRANDMEMBER under WATCH and returns None when another client touched the sets in
--- between, so an empty pool and contention look alike. Here nil means that, after
--- reclaiming up to `limit` expired leases, no resource was available. The resource
--- stays held until `release.lua` frees it.
--- @key available          the set of resources free to acquire
--- @key occupied           the set of resources held
--- @key leases             sorted set: leased resource -> lease deadline (ms, server clock)
--- @key holders            hash: leased resource -> its holder's token
--- @arg limit uint         the most expired leases reclaimed first, from 1 to 1000
--- @return string?         the resource; nil when every resource is held
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

-- Expired leases go back to the pool first (see reclaim.lua).
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local expired = redis.call('ZRANGE', leases, '-inf', now, 'BYSCORE', 'LIMIT', 0, tonumber(limit))
for _, stale in ipairs(expired) do
  redis.call('ZREM', leases, stale)
  redis.call('HDEL', holders, stale)
  redis.call('SMOVE', occupied, available, stale)
end

local resource = redis.call('SPOP', available)
if not resource then
  return false
end
redis.call('SADD', occupied, resource)
return resource
