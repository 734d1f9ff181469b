#!lua flags=no-writes
--- Reads one job: its state, deliveries, group, last error and payload.
---
--- Beyond the books, for operators and for a caller whose add was deduplicated.
--- Reply: empty when there is no job with this id; otherwise state, delivery count,
--- priority, group ('' for none), last error ('' for none), payload, and the time that
--- goes with the state (ms, server clock: when a delayed job is due, when a lease runs
--- out, when a job died; '' for waiting and parked jobs).
--- @key delayed zset             job id -> when it becomes waiting (ms, server clock)
--- @key leased zset              job id -> lease deadline (ms, server clock)
--- @key dead zset                job id -> when it died (ms, server clock): the dead-letter queue
--- @key jobs hash                <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @arg id string non-empty      the job's id
--- @return [bytes]               state, deliveries, priority, group, last error, payload, time
--- @error BAD_ARGS               not 9 keys and 1 argument
--- @error BAD_ID                 `id` is empty
--- @complexity O(1)
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `cargo run -p redis-patterns-codegen -- fix <folder>`). A bad call changes nothing.
if #KEYS ~= 4 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local delayed = KEYS[1]
local leased = KEYS[2]
local dead = KEYS[3]
local jobs = KEYS[4]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID id must not be empty')
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE whichever state is asked for.
for _, zset in ipairs({ delayed, leased, dead }) do
  redis.call('ZCARD', zset)
end
local fields = redis.call('HMGET', jobs, 's:' .. id, 'n:' .. id, 'r:' .. id, 'g:' .. id, 'e:' .. id, 'd:' .. id)
local state = fields[1]
if not state then
  return {}
end
local at = false
if state == 'delayed' then
  at = redis.call('ZSCORE', delayed, id)
elseif state == 'leased' then
  at = redis.call('ZSCORE', leased, id)
elseif state == 'dead' then
  at = redis.call('ZSCORE', dead, id)
end
local priority = 255 - math.floor(tonumber(fields[3]) / 10000000000000)
return { state, fields[2], tostring(priority), fields[4] or '', fields[5] or '', fields[6], at or '' }
