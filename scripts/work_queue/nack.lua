--- Ends a failed delivery: the job is retried after `delay`, or goes to the dead-letter queue.
---
--- Beyond the books. Only the holder of the job's current lease can nack it (see
--- `ack.lua`). A job delivered `max_deliveries` times goes to `dead` with `reason`, where
--- an operator can read it (`list.lua`, `job.lua`), requeue it (`requeue.lua`) or drop it
--- (`remove.lua`). Otherwise it waits in `delayed` for `delay` (holding no lease), or goes
--- straight back to `waiting` at its rank when `delay` is 0. The caller picks the delay:
--- a fixed one, or a backoff that grows with the delivery count.
--- Reply: the job's new state ('waiting', 'delayed' or 'dead'), and when it can be taken
--- again (ms, server clock; when it died, for 'dead').
--- @key waiting zset             job id -> rank: (255 - priority) × 10^13 + arrival number
--- @key delayed zset             job id -> when it becomes waiting (ms, server clock)
--- @key leased zset              job id -> lease deadline (ms, server clock)
--- @key dead zset                job id -> when it died (ms, server clock): the dead-letter queue
--- @key parked zset              held-back jobs of groups at their limit, all at score 0 (see take.lua)
--- @key jobs hash                <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @key groups hash              per group g: r:<g> running; p:<g> started, z:<g> ring size, s:<g>:<i> start times
--- @arg id string non-empty      the job's id
--- @arg token uint 1..=10^15-1   the lease token `take.lua` returned with the job
--- @arg delay ms 0..=10^12       how long before the job can be taken again; 0 for at once
--- @arg max_deliveries uint 1..=1000    a job delivered this many times goes to `dead` instead
--- @arg reason bytes             why it failed, kept with the job
--- @return (string, int)         the job's new state, and when it can be taken again
--- @error BAD_ARGS               not 9 keys and 5 arguments
--- @error BAD_ID                 `id` is empty
--- @error BAD_TOKEN              `token` is not an integer from 1 to 10^15 - 1
--- @error BAD_DELAY              `delay` is not whole milliseconds from 0 to 10^12
--- @error BAD_MAX_DELIVERIES     `max_deliveries` is not an integer from 1 to 1000
--- @error LEASE_LOST             the job is not held under `token` (acked, handed to another worker, or gone)
--- @clock server
--- @complexity O(log N), N = the jobs
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `cargo run -p redis-patterns-codegen -- fix <folder>`). A bad call changes nothing.
-- Whether decimal integer a is less than b, both in the one canonical form below: by sign,
-- then length, then in two parts of at most 10 digits, each exact in Lua's numbers, so that
-- 64-bit values compare exactly (and no locale's collation is involved).
local function decimal_less(a, b)
  local a_negative, b_negative = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if a_negative ~= b_negative then
    return a_negative
  end
  if a_negative then
    a, b = string.sub(b, 2), string.sub(a, 2)
  end
  if #a ~= #b then
    return #a < #b
  end
  local a_high, b_high = tonumber(string.sub(a, 1, 10)), tonumber(string.sub(b, 1, 10))
  if a_high ~= b_high then
    return a_high < b_high
  end
  return (tonumber(string.sub(a, 11)) or 0) < (tonumber(string.sub(b, 11)) or 0)
end
-- The one rule for integers: decimal digits, an optional leading '-', no leading zero, and
-- no '+', space, fraction, exponent or hex; within min and max. Returns the text itself.
local function integer(s, min, max)
  if s ~= '0' and not string.match(s, '^%-?[1-9]%d*$') then
    return nil
  end
  if decimal_less(s, min) or decimal_less(max, s) then
    return nil
  end
  return s
end
-- A bad argument as an error shows it: its first 32 bytes, other than printable ASCII
-- escaped, and its length when it is longer.
local function shown(s)
  local head = string.gsub(string.sub(s, 1, 32), '[^%w%p ]', function(c)
    return string.format('\\%03d', string.byte(c))
  end)
  if #s > 32 then
    return '"' .. head .. '"... (' .. #s .. ' bytes)'
  end
  return '"' .. head .. '"'
end
if #KEYS ~= 7 or #ARGV ~= 5 then
  return redis.error_reply('BAD_ARGS expected 7 keys and 5 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local delayed = KEYS[2]
local leased = KEYS[3]
local dead = KEYS[4]
local parked = KEYS[5]
local jobs = KEYS[6]
local groups = KEYS[7]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID id must not be empty')
end
local token = integer(ARGV[2], '1', '999999999999999')
if not token then
  return redis.error_reply('BAD_TOKEN token must be an integer from 1 to 999999999999999, got ' .. shown(ARGV[2]))
end
token = tonumber(token)
local delay = integer(ARGV[3], '0', '1000000000000')
if not delay then
  return redis.error_reply('BAD_DELAY delay must be whole milliseconds from 0 to 1000000000000, got ' .. shown(ARGV[3]))
end
delay = tonumber(delay)
local max_deliveries = integer(ARGV[4], '1', '1000')
if not max_deliveries then
  return redis.error_reply(
      'BAD_MAX_DELIVERIES max_deliveries must be an integer from 1 to 1000, got ' .. shown(ARGV[4]))
end
max_deliveries = tonumber(max_deliveries)
local reason = ARGV[5]
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`jobs` is read first).
for _, zset in ipairs({ waiting, delayed, leased, dead, parked }) do
  redis.call('ZCARD', zset)
end
redis.call('HLEN', groups)

-- The caller must hold the job's current lease.
local state, held = unpack(redis.call('HMGET', jobs, 's:' .. id, 't:' .. id))
if not held or tonumber(held) ~= token then
  return redis.error_reply('LEASE_LOST job ' .. shown(id) .. ' is ' .. (state or 'gone')
    .. ', not held under token ' .. ARGV[2])
end

-- Moves up to n parked jobs of `group` back to waiting, at their rank (see take.lua for
-- how a parked job is named).
local function unpark(group, n)
  local prefix = string.format('%08x', #group) .. group
  local members = redis.call('ZRANGE', parked, '[' .. prefix, '(' .. prefix .. ':', 'BYLEX', 'LIMIT', 0, n)
  for _, member in ipairs(members) do
    local parked_id = string.sub(member, #prefix + 17)
    redis.call('ZREM', parked, member)
    redis.call('ZADD', waiting, tonumber(string.sub(member, #prefix + 1, #prefix + 16)), parked_id)
    redis.call('HSET', jobs, 's:' .. parked_id, 'waiting')
  end
end

-- A job of `group` no longer runs: one fewer running, and one of its parked jobs may go.
local function release_slot(group)
  if redis.call('HINCRBY', groups, 'r:' .. group, -1) <= 0 then
    redis.call('HDEL', groups, 'r:' .. group)
  end
  unpark(group, 1)
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local group, deliveries, rank = unpack(redis.call('HMGET', jobs, 'g:' .. id, 'n:' .. id, 'r:' .. id))
redis.call('ZREM', leased, id)
redis.call('HDEL', jobs, 't:' .. id)
redis.call('HSET', jobs, 'e:' .. id, reason)
if group then
  release_slot(group)
end
if tonumber(deliveries) >= max_deliveries then
  redis.call('ZADD', dead, now, id)
  redis.call('HSET', jobs, 's:' .. id, 'dead')
  return { 'dead', now }
end
if delay > 0 then
  redis.call('ZADD', delayed, now + delay, id)
  redis.call('HSET', jobs, 's:' .. id, 'delayed')
  return { 'delayed', now + delay }
end
redis.call('ZADD', waiting, rank, id)
redis.call('HSET', jobs, 's:' .. id, 'waiting')
return { 'waiting', now }
