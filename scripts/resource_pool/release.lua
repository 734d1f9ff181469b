--- Returns a resource held with no lease to the pool.
---
--- 《Redis 应用实例》 chapter 10 (`ResourcePool.release`, one SMOVE in the book). A
--- resource held under a lease is left alone: only its holder's token releases it
--- (`release_lease.lua`), so a client whose lease ran out cannot free a resource that
--- now belongs to someone else.
--- @key available          the set of resources free to acquire
--- @key occupied           the set of resources held
--- @key holders            hash: leased resource -> its holder's token
--- @arg resource string    the resource's name; not empty
--- @return bool            1 when it was held with no lease and is now available; 0 otherwise
--- @error BAD_RESOURCE     `resource` is empty
--- @complexity O(1)
local available = KEYS[1]
local occupied = KEYS[2]
local holders = KEYS[3]
local resource = ARGV[1]

if resource == '' then
  return redis.error_reply('BAD_RESOURCE resource must not be empty')
end

-- Fails with WRONGTYPE when `available` holds no set, even when `occupied` is missing
-- (then SMOVE would answer 0 without looking at `available`).
redis.call('SCARD', available)

if redis.call('HEXISTS', holders, resource) == 1 then
  return 0
end
return redis.call('SMOVE', occupied, available, resource)
