--- Counts the members of the union of several sets, in Redis, without sending them back.
---
--- 《Redis 应用实例》 chapter 7 (`UniqueCounter.union`). The book sends SUNION, so every
--- member travels to the client only to be counted there. Here SUNIONSTORE builds the
--- union in `scratch`, which takes its size and is deleted again in the same atomic
--- step: no other client ever sees it. A `scratch` key that already exists is refused,
--- so the script never overwrites data. All keys must share one cluster hash slot
--- (derive `scratch` from the first counter's name, as `{name}:union_scratch`).
--- @key scratch             where the union is built and deleted again; must not exist
--- @key counters...         the sets to unite; from 1 to 1000
--- @return int              the number of distinct members in all the sets
--- @error NO_COUNTERS       no set was passed, or more than 1000
--- @error SCRATCH_IN_USE    `scratch` exists; pick a key that holds nothing
--- @complexity O(N), N = the members of all the sets
local scratch = KEYS[1]

-- unpack() of a very long list would overflow Lua's stack.
if #KEYS < 2 or #KEYS > 1001 then
  return redis.error_reply('NO_COUNTERS pass from 1 to 1000 sets after the scratch key, got ' .. (#KEYS - 1))
end
if redis.call('EXISTS', scratch) == 1 then
  return redis.error_reply('SCRATCH_IN_USE the scratch key "' .. scratch .. '" exists; it must hold nothing')
end

local count = redis.call('SUNIONSTORE', scratch, unpack(KEYS, 2))
redis.call('DEL', scratch)
return count
