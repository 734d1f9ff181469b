--- Changes a job's priority; a waiting or parked job moves to its new place at once.
---
--- Beyond the books, for operators (BullMQ's `changePriority`). The job keeps its arrival
--- number, so among the jobs of its new priority it stands where its add put it. A
--- delayed, leased or dead job keeps its place and waits at the new priority when it next
--- waits.
--- @key waiting zset {<name>}:waiting  job id -> rank: (255 - priority) × 10^13 + 5 × 10^12 ± arrival (- if LIFO)
--- @key parked zset {<name>}:parked    held-back jobs of groups at their limit, all at score 0 (see take.lua)
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @arg id string non-empty      the job's id
--- @arg priority uint 0..=255    higher is taken first
--- @return string?               the job's state; nil when there is no job with this id
--- @error BAD_ARGS               not 3 keys and 2 arguments
--- @error BAD_ID                 empty
--- @error BAD_PRIORITY           not an integer within its range
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_JOBS               `jobs` holds a field of the job these scripts did not write; nothing was written
--- @uses parked_member safe_integer shown
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 3 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local parked = KEYS[2]
local jobs = KEYS[3]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID must not be empty')
end
local priority = ARGV[2] == '0' and 0 or tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not priority or priority > 255 then
  return redis.error_reply('BAD_PRIORITY must be an integer from 0 to 255, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(waiting, '^(.+):waiting$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:waiting, got ' .. shown(waiting))
end
if parked ~= tag_of_keys .. ':parked' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:parked with <name> as in waiting, got ' .. shown(parked))
end
if jobs ~= tag_of_keys .. ':jobs' then
  return redis.error_reply('BAD_KEYS KEYS[3] must be {<name>}:jobs with <name> as in waiting, got ' .. shown(jobs))
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`jobs` is read first).
local state, rank, group = unpack(redis.call('HMGET', jobs, 's:' .. id, 'r:' .. id, 'g:' .. id))
for _, zset in ipairs({ waiting, parked }) do
  redis.call('ZCARD', zset)
end
if not state then
  return false
end
if not (rank and safe_integer(rank, 1, 2559999999999999)) then
  return redis.error_reply('BAD_JOBS job ' .. shown(id) .. ' has the rank ' .. shown(rank or '')
    .. ' and the group ' .. shown(group or ''))
end
local old = tonumber(rank)
local new = (255 - priority) * 10000000000000 + old % 10000000000000
redis.call('HSET', jobs, 'r:' .. id, new)
if state == 'waiting' then
  redis.call('ZADD', waiting, 'XX', new, id)
elseif state == 'parked' then
  redis.call('ZREM', parked, parked_member(group or '', old, id))
  redis.call('ZADD', parked, 0, parked_member(group or '', new, id))
end
return state
