#!lua flags=no-writes
--- Tells whether the pool has `resource`, available or held.
---
--- 《Redis 应用实例》 chapter 10 (`ResourcePool.has`, MULTI SISMEMBER SISMEMBER EXEC in
--- the book, which returns 0/1). Read-only: runs with EVALSHA_RO, also on replicas.
--- @key available          the set of resources free to acquire
--- @key occupied           the set of resources held
--- @arg resource string    the resource's name
--- @return bool            1 when the pool has it; 0 when not
--- @complexity O(1)
local available = KEYS[1]
local occupied = KEYS[2]
local resource = ARGV[1]

if redis.call('SISMEMBER', available, resource) == 1 then
  return 1
end
return redis.call('SISMEMBER', occupied, resource)
