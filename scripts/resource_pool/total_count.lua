#!lua flags=no-writes
--- Counts the pool's resources, available and held, at one moment.
---
--- 《Redis 应用实例》 chapter 10 (`ResourcePool.total_count`, MULTI SCARD SCARD EXEC in
--- the book). Read-only: runs with EVALSHA_RO, also on replicas.
--- @key available          the set of resources free to acquire
--- @key occupied           the set of resources held
--- @return int             how many resources the pool has
--- @complexity O(1)
local available = KEYS[1]
local occupied = KEYS[2]

return redis.call('SCARD', available) + redis.call('SCARD', occupied)
