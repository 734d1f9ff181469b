--- Removes a job that is not running: waiting, delayed, parked, dead, completed (kept) or blocked.
---
--- Beyond the books. A leased job is left to its worker, which acks or nacks it: removing
--- it under the worker would let the worker's ack fail for no reason of its own.
--- @key waiting zset {<name>}:waiting  job id -> rank: (255 - priority) × 10^13 + 5 × 10^12 ± arrival (- if LIFO)
--- @key delayed zset {<name>}:delayed  job id -> when it becomes waiting (ms, server clock)
--- @key dead zset {<name>}:dead        job id -> when it died (ms, server clock): the dead-letter queue
--- @key parked zset {<name>}:parked    held-back jobs of groups at their limit, all at score 0 (see take.lua)
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @key completed zset {<name>}:completed  job id -> when it completed (ms, server clock), while kept
--- @key blocked zset {<name>}:blocked  flow parent id -> when it was added (ms, server clock), while blocked
--- @arg id string non-empty      the job's id
--- @return (bool, string?)       removed, and the state it was in (nil when there is no job with this id)
--- @error BAD_ARGS               not 7 keys and 1 argument
--- @error BAD_ID                 empty
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_JOBS               `jobs` holds a field of the job these scripts did not write; nothing was written
--- @uses drop_record parked_member safe_integer shown
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
-- Every field of job `job_id` in the jobs hash goes (add.lua and take.lua name them).
local function drop_record(jobs_hash, job_id)
  redis.call('HDEL', jobs_hash, 'd:' .. job_id, 's:' .. job_id, 'r:' .. job_id, 'n:' .. job_id,
    'g:' .. job_id, 't:' .. job_id, 'e:' .. job_id, 'a:' .. job_id, 'p:' .. job_id, 'P:' .. job_id,
    'w:' .. job_id, 'x:' .. job_id, 'o:' .. job_id, 'l:' .. job_id, 'b:' .. job_id, 'v:' .. job_id,
    'c:' .. job_id)
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 7 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 7 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local delayed = KEYS[2]
local dead = KEYS[3]
local parked = KEYS[4]
local jobs = KEYS[5]
local completed = KEYS[6]
local blocked = KEYS[7]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID must not be empty')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(waiting, '^(.+):waiting$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:waiting, got ' .. shown(waiting))
end
if delayed ~= tag_of_keys .. ':delayed' or dead ~= tag_of_keys .. ':dead' or parked ~= tag_of_keys .. ':parked' or
    jobs ~= tag_of_keys .. ':jobs' or completed ~= tag_of_keys .. ':completed' or
    blocked ~= tag_of_keys .. ':blocked' then
  for i, each in ipairs({ ':delayed', ':dead', ':parked', ':jobs', ':completed', ':blocked' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in waiting, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`jobs` is read first).
for _, zset in ipairs({ waiting, delayed, dead, parked, completed, blocked }) do
  redis.call('ZCARD', zset)
end
local state, group, rank = unpack(redis.call('HMGET', jobs, 's:' .. id, 'g:' .. id, 'r:' .. id))
if not state then
  return { 0, false }
end
if state == 'leased' then
  return { 0, state }
end
if state == 'parked' then
  if not (rank and safe_integer(rank, 1, 2559999999999999)) then
    return redis.error_reply('BAD_JOBS parked job ' .. shown(id) .. ' has the group ' .. shown(group or '')
      .. ' and the rank ' .. shown(rank or ''))
  end
  -- Its name in `parked`, as take.lua wrote it.
  redis.call('ZREM', parked, parked_member(group or '', tonumber(rank), id))
else
  local set = ({ waiting = waiting, delayed = delayed, dead = dead, completed = completed, blocked = blocked })[state]
  if set then
    redis.call('ZREM', set, id)
  end
end
drop_record(jobs, id)
return { 1, state }
