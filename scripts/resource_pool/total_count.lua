#!lua flags=no-writes
--- Counts the pool's resources, available and held, at one moment.
---
--- 《Redis 应用实例》 chapter 10 (`ResourcePool.total_count`, MULTI SCARD SCARD EXEC in
--- the book). Read-only: runs with EVALSHA_RO, also on replicas.
--- @key available set {<name>}:available  the set of resources free to acquire
--- @key occupied set {<name>}:occupied    the set of resources held
--- @return uint                   how many resources the pool has
--- @error BAD_ARGS                not 2 keys and 0 arguments
--- @complexity O(1)
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local available = KEYS[1]
local occupied = KEYS[2]
-- End of the generated input checks.
return redis.call('SCARD', available) + redis.call('SCARD', occupied)
