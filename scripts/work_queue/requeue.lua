--- Moves a job from the dead-letter queue back to waiting, with its delivery count reset.
---
--- Beyond the books. The job keeps its id, payload, priority and group, and its last
--- error until it fails again; it goes behind the jobs already waiting at its priority.
--- A job that is not dead is left alone.
--- @key waiting zset             job id -> rank: (255 - priority) × 10^13 + arrival number
--- @key dead zset                job id -> when it died (ms, server clock): the dead-letter queue
--- @key jobs hash                <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @arg id string non-empty      the job's id
--- @return bool                  whether the job was dead and is now waiting
--- @error BAD_ARGS               not 9 keys and 1 argument
--- @error BAD_ID                 `id` is empty
--- @complexity O(log N), N = the jobs
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `cargo run -p redis-patterns-codegen -- fix <folder>`). A bad call changes nothing.
if #KEYS ~= 3 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local dead = KEYS[2]
local jobs = KEYS[3]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID id must not be empty')
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`jobs` is read first).
for _, zset in ipairs({ waiting, dead }) do
  redis.call('ZCARD', zset)
end
if redis.call('HGET', jobs, 's:' .. id) ~= 'dead' then
  return false
end
local priority = 255 - math.floor(tonumber(redis.call('HGET', jobs, 'r:' .. id)) / 10000000000000)
local seq = redis.call('HINCRBY', jobs, '#seq', 1)
if seq >= 10000000000000 then
  seq = 1
  redis.call('HSET', jobs, '#seq', seq)
end
local rank = (255 - priority) * 10000000000000 + seq
redis.call('ZREM', dead, id)
redis.call('ZADD', waiting, rank, id)
redis.call('HSET', jobs, 's:' .. id, 'waiting', 'r:' .. id, rank, 'n:' .. id, 0)
return true
