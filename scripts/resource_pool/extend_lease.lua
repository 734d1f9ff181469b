--- Sets a leased resource's deadline to `ttl` from now if it is still held with `token`.
---
--- Beyond the book: a holder whose work runs long renews its lease before it runs out.
--- After the lease was reclaimed, the old token extends nothing.
--- @key leases             sorted set: leased resource -> lease deadline (ms, server clock)
--- @key holders            hash: leased resource -> its holder's token
--- @arg resource string    the resource's name; not empty
--- @arg token string       the token it was acquired with; not empty
--- @arg ttl ms             the new lease in milliseconds, from 1 to 10^15 - 1
--- @return bool            1 when the lease was set; 0 when it is not held with `token`
--- @error BAD_RESOURCE     `resource` is empty
--- @error BAD_TOKEN        `token` is empty
--- @error BAD_TTL          `ttl` is not a whole number of milliseconds from 1 to 10^15 - 1
--- @clock server
--- @complexity O(log N), N = the leases
local leases = KEYS[1]
local holders = KEYS[2]
local resource = ARGV[1]
local token = ARGV[2]
local ttl = ARGV[3]

if resource == '' then
  return redis.error_reply('BAD_RESOURCE resource must not be empty')
end
if token == '' then
  return redis.error_reply('BAD_TOKEN token must not be empty')
end
if not string.match(ttl, '^%d+$') or not string.match(ttl, '[1-9]') or #ttl > 15 then
  return redis.error_reply('BAD_TTL ttl must be whole milliseconds from 1 to 10^15 - 1, got "' .. ttl .. '"')
end
-- O(1) read that fails with WRONGTYPE before anything is written.
redis.call('ZCARD', leases)

if redis.call('HGET', holders, resource) ~= token then
  return 0
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZADD', leases, now + tonumber(ttl), resource)
return 1
