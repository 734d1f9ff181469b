#!lua flags=no-writes
--- Counts the members of `x` that are not in `y`, in Redis, without sending them back.
---
--- 《Redis 应用实例》 chapter 7 (`UniqueCounter.diff`). The book sends SDIFF, so every
--- member of the difference travels to the client only to be counted there. Here
--- |x \ y| = |x| - |x ∩ y|: SCARD and SINTERCARD (Redis 7.0) in one atomic step, which
--- writes nothing (it runs with EVALSHA_RO, also on replicas) and needs no scratch key.
--- Both keys must share one cluster hash slot.
--- @key x               the set whose members are counted
--- @key y               the set whose members are left out
--- @return int          the number of members of `x` that are not in `y`
--- @complexity O(min(|x|, |y|))
local x = KEYS[1]
local y = KEYS[2]

return redis.call('SCARD', x) - redis.call('SINTERCARD', 2, x, y)
