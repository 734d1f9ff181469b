--- Takes an available resource for `ttl` under the caller's `token`; nil when none is left.
---
--- Beyond the book. Like `acquire.lua`, but the resource comes back to the pool by itself
--- once its lease deadline (server clock, now + `ttl`) has passed, so a holder that
--- crashes cannot keep it forever, and only `token` can release or extend it
--- (`release_lease.lua`, `extend_lease.lua`). Up to `limit` expired leases are reclaimed
--- before picking, so nil means every resource is held by a live holder.
--- @key available          the set of resources free to acquire
--- @key occupied           the set of resources held
--- @key leases             sorted set: leased resource -> lease deadline (ms, server clock)
--- @key holders            hash: leased resource -> its holder's token
--- @arg ttl ms             the lease in milliseconds, from 1 to 10^15 - 1
--- @arg token string       the holder's secret, fresh for each acquisition; not empty
--- @arg limit uint         the most expired leases reclaimed first, from 1 to 1000
--- @return string?         the resource; nil when every resource is held
--- @error BAD_TTL          `ttl` is not a whole number of milliseconds from 1 to 10^15 - 1
--- @error BAD_TOKEN        `token` is empty
--- @error BAD_LIMIT        `limit` is not a whole number from 1 to 1000
--- @clock server
--- @complexity O(log N + M), N = the leases, M = `limit`
local available = KEYS[1]
local occupied = KEYS[2]
local leases = KEYS[3]
local holders = KEYS[4]
local ttl = ARGV[1]
local token = ARGV[2]
local limit = ARGV[3]

-- Digits only (tonumber() would take '1e3' and '0x10').
if not string.match(ttl, '^%d+$') or not string.match(ttl, '[1-9]') or #ttl > 15 then
  return redis.error_reply('BAD_TTL ttl must be whole milliseconds from 1 to 10^15 - 1, got "' .. ttl .. '"')
end
if token == '' then
  return redis.error_reply('BAD_TOKEN token must not be empty')
end
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
redis.call('ZADD', leases, now + tonumber(ttl), resource)
redis.call('HSET', holders, resource, token)
return resource
