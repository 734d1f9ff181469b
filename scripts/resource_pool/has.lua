#!lua flags=no-writes
--- Tells whether the pool has `resource`, available or held.
---
--- 《Redis 应用实例》 chapter 10 (`ResourcePool.has`, MULTI SISMEMBER SISMEMBER EXEC in
--- the book, which returns 0/1). Read-only: runs with EVALSHA_RO, also on replicas.
--- @key available set {<name>}:available  the set of resources free to acquire
--- @key occupied set {<name>}:occupied    the set of resources held
--- @arg resource string non-empty the resource's name
--- @return bool                   1 when the pool has it; 0 when not
--- @error BAD_ARGS                not 2 keys and 1 argument
--- @error BAD_RESOURCE            empty
--- @complexity O(1)
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local available = KEYS[1]
local occupied = KEYS[2]
local resource = ARGV[1]
if resource == '' then
  return redis.error_reply('BAD_RESOURCE resource must not be empty')
end
-- End of the generated input checks.
-- Both sets are read, so a key of another type is WRONGTYPE whatever the answer.
local held = redis.call('SISMEMBER', occupied, resource)
if redis.call('SISMEMBER', available, resource) == 1 then
  return 1
end
return held
