--- Adds `resource` to the pool, as available, unless the pool already has it.
---
--- 《Redis 应用实例》 chapter 10 (`ResourcePool.associate`). The book checks both sets
--- under WATCH and returns None when another client touched them in between, so the
--- caller must retry; this checks and adds in one atomic step and never fails that way.
--- @key available          the set of resources free to acquire
--- @key occupied           the set of resources held; same hash slot as `available`
--- @arg resource string    the resource's name; not empty
--- @return bool            1 when added; 0 when the pool already has it, available or held
--- @error BAD_RESOURCE     `resource` is empty
--- @complexity O(1)
local available = KEYS[1]
local occupied = KEYS[2]
local resource = ARGV[1]

if resource == '' then
  return redis.error_reply('BAD_RESOURCE resource must not be empty')
end

if redis.call('SISMEMBER', available, resource) == 1 or redis.call('SISMEMBER', occupied, resource) == 1 then
  return 0
end
return redis.call('SADD', available, resource)
