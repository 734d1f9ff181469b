--- Delays a job that is not running, or promotes a delayed job at once with a delay of 0.
---
--- Beyond the books, for operators (BullMQ's `changeDelay` and `promote`). A waiting,
--- parked or delayed job becomes delayed until `delay` from now; with `delay` 0 a delayed
--- job waits at once at its rank, and a waiting or parked job stays as it is (it is ready
--- already). A leased, dead or blocked job (a flow's parent waiting for its children) is
--- left alone: its state says why.
--- @key waiting zset {<name>}:waiting  job id -> rank: (255 - priority) × 10^13 + 5 × 10^12 ± arrival (- if LIFO)
--- @key delayed zset {<name>}:delayed  job id -> when it becomes waiting (ms, server clock)
--- @key parked zset {<name>}:parked    held-back jobs of groups at their limit, all at score 0 (see take.lua)
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @key signal zset {<name>}:signal    one member while a job may be ready: workers wait on it with BZPOPMIN
--- @arg id string non-empty      the job's id
--- @arg delay ms 0..=10^12       how long from now the job waits before it can be taken; 0 for at once
--- @return (bool, string?)       whether the job moved, and its state after the call (nil: no job with this id)
--- @error BAD_ARGS               not 5 keys and 2 arguments
--- @error BAD_ID                 empty
--- @error BAD_DELAY              not whole milliseconds within its range
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_JOBS               `jobs` holds a field of the job these scripts did not write; nothing was written
--- @uses parked_member wake_workers safe_integer shown
--- @clock server
--- @complexity O(log N), N = the jobs
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; work_queue/_shared.lua of the scripts folder).
-- The same rule where min and max are within 2^53 - 1 of 0, on a fast path: there every
-- integer is exact in Lua's numbers, and a longer one rounds to a number out of range.
-- Returns the number.
local function safe_integer(s, min, max)
  local n = (s == '0' or string.match(s, '^%-?[1-9]%d*$')) and tonumber(s)
  if n and n >= min and n <= max then
    return n
  end
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
-- A parked job is the member <8 hex digits: the group's length><group><16-digit rank><id>,
-- so that one group's parked jobs are one lexicographic range, in rank order.
local function parked_prefix(of_group)
  return string.format('%08x', #of_group) .. of_group
end
-- The member of `parked` that holds job `job_id` of group `of_group` at `rank`.
local function parked_member(of_group, rank, job_id)
  return parked_prefix(of_group) .. string.format('%016d', rank) .. job_id
end
-- Tells workers blocked on `signal_key` (BZPOPMIN) that a job may be ready: the key holds
-- at most one member, so it stays one member however many jobs wait.
local function wake_workers(signal_key)
  redis.call('ZADD', signal_key, '0', 'ready')
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 5 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 5 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local delayed = KEYS[2]
local parked = KEYS[3]
local jobs = KEYS[4]
local signal = KEYS[5]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID must not be empty')
end
local delay = ARGV[2] == '0' and 0 or tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not delay or delay > 1000000000000 then
  return redis.error_reply('BAD_DELAY must be whole milliseconds from 0 to 1000000000000, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(waiting, '^(.+):waiting$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:waiting, got ' .. shown(waiting))
end
if delayed ~= tag_of_keys .. ':delayed' or parked ~= tag_of_keys .. ':parked' or jobs ~= tag_of_keys .. ':jobs' or
    signal ~= tag_of_keys .. ':signal' then
  for i, each in ipairs({ ':delayed', ':parked', ':jobs', ':signal' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in waiting, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`jobs` is read first).
local state, rank, group = unpack(redis.call('HMGET', jobs, 's:' .. id, 'r:' .. id, 'g:' .. id))
for _, zset in ipairs({ waiting, delayed, parked, signal }) do
  redis.call('ZCARD', zset)
end
if not state then
  return { 0, false }
end
if (state ~= 'waiting' and state ~= 'parked' and state ~= 'delayed') or (delay == 0 and state ~= 'delayed') then
  return { 0, state }
end
if not (rank and safe_integer(rank, 1, 2559999999999999)) then
  return redis.error_reply('BAD_JOBS job ' .. shown(id) .. ' has the rank ' .. shown(rank or '')
    .. ' and the group ' .. shown(group or ''))
end
if delay == 0 then
  redis.call('ZREM', delayed, id)
  redis.call('ZADD', waiting, rank, id)
  redis.call('HSET', jobs, 's:' .. id, 'waiting')
  wake_workers(signal)
  return { 1, 'waiting' }
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if state == 'waiting' then
  redis.call('ZREM', waiting, id)
elseif state == 'parked' then
  redis.call('ZREM', parked, parked_member(group or '', tonumber(rank), id))
end
redis.call('ZADD', delayed, now + delay, id)
redis.call('HSET', jobs, 's:' .. id, 'delayed')
return { 1, 'delayed' }
