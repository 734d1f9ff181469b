#!lua flags=no-writes
--- Counts the jobs in each state, at one instant.
---
--- Beyond the books, for operators and dashboards. A leased job whose lease ran out
--- counts as leased until a `take.lua` call hands it back.
--- @key waiting zset {<name>}:waiting  job id -> rank: (255 - priority) × 10^13 + arrival number
--- @key delayed zset {<name>}:delayed  job id -> when it becomes waiting (ms, server clock)
--- @key leased zset {<name>}:leased    job id -> lease deadline (ms, server clock)
--- @key dead zset {<name>}:dead        job id -> when it died (ms, server clock): the dead-letter queue
--- @key parked zset {<name>}:parked    held-back jobs of groups at their limit, all at score 0 (see take.lua)
--- @return (uint, uint, uint, uint, uint)  waiting, parked, delayed, leased, dead
--- @error BAD_ARGS               not 5 keys and 0 arguments
--- @complexity O(1)
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 5 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 5 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local delayed = KEYS[2]
local leased = KEYS[3]
local dead = KEYS[4]
local parked = KEYS[5]
-- End of the generated input checks.
return {
  redis.call('ZCARD', waiting),
  redis.call('ZCARD', parked),
  redis.call('ZCARD', delayed),
  redis.call('ZCARD', leased),
  redis.call('ZCARD', dead),
}
