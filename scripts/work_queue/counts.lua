#!lua flags=no-writes
--- Counts the jobs in each state, at one instant.
---
--- Beyond the books, for operators and dashboards. A leased job whose lease ran out
--- counts as leased until a `take.lua` call hands it back.
--- @key waiting zset             job id -> rank: (255 - priority) × 10^13 + arrival number
--- @key delayed zset             job id -> when it becomes waiting (ms, server clock)
--- @key leased zset              job id -> lease deadline (ms, server clock)
--- @key dead zset                job id -> when it died (ms, server clock): the dead-letter queue
--- @key parked zset              held-back jobs of groups at their limit, all at score 0 (see take.lua)
--- @key jobs hash       <x>:<id> per job (x: d payload, s state, r rank, n deliveries, g group, t token, e error)
--- @key groups hash              per group g: r:<g> running; p:<g> started, z:<g> ring size, s:<g>:<i> start times
--- @key wake zset                group -> when its rate window lets a parked job start (ms)
--- @key idle zset                group -> when its ring of start times stops mattering (ms), to drop it
--- @return (uint, uint, uint, uint, uint)  waiting, parked, delayed, leased, dead
--- @error BAD_ARGS               not 9 keys and 0 arguments
--- @complexity O(1)
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `cargo run -p redis-patterns-codegen -- fix <folder>`). A bad call changes nothing.
if #KEYS ~= 9 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 9 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local delayed = KEYS[2]
local leased = KEYS[3]
local dead = KEYS[4]
local parked = KEYS[5]
local jobs = KEYS[6]
local groups = KEYS[7]
local wake = KEYS[8]
local idle = KEYS[9]
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
for _, zset in ipairs({ waiting, delayed, leased, dead, parked, wake, idle }) do
  redis.call('ZCARD', zset)
end
redis.call('HLEN', jobs)
redis.call('HLEN', groups)
return {
  redis.call('ZCARD', waiting),
  redis.call('ZCARD', parked),
  redis.call('ZCARD', delayed),
  redis.call('ZCARD', leased),
  redis.call('ZCARD', dead),
}
