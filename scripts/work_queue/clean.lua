--- Removes up to `count` jobs in one state (waiting, delayed, parked, dead or completed), first first.
---
--- Beyond the books, for operators (BullMQ's `drain` and `clean`, Sidekiq's "clear"). Waiting
--- and parked jobs go in the order they would run, delayed ones by due time, dead and
--- completed ones oldest first, only those that ended at least `grace` ago (BullMQ's
--- `clean(grace, limit, type)`); their records go with them. The other states have no
--- end time: for them `grace` must be 0. Leased jobs are left to their workers (see
--- `remove.lua`). The work per call is bounded; call again while it removes `count`.
--- @key waiting zset {<name>}:waiting  job id -> rank: (255 - priority) × 10^13 + 5 × 10^12 ± arrival (- if LIFO)
--- @key delayed zset {<name>}:delayed  job id -> when it becomes waiting (ms, server clock)
--- @key dead zset {<name>}:dead        job id -> when it died (ms, server clock): the dead-letter queue
--- @key parked zset {<name>}:parked    held-back jobs of groups at their limit, all at score 0 (see take.lua)
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @key completed zset {<name>}:completed  job id -> when it completed (ms, server clock), while kept
--- @arg state string waiting|delayed|parked|dead|completed  the state whose jobs go
--- @arg count uint 1..=100       the most jobs removed
--- @arg grace ms 0..=10^12       dead and completed jobs that ended less than this long ago stay
--- @return uint                  how many jobs were removed
--- @error BAD_ARGS               not 6 keys and 3 arguments
--- @error BAD_STATE              not one of its choices
--- @error BAD_COUNT              not an integer within its range
--- @error BAD_GRACE              not whole milliseconds within its range, or not 0 for a state without end times
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_PARKED             `parked` holds a member that take.lua did not write; nothing was written
--- @uses drop_record parse_parked shown
--- @default grace 0              WorkQueue::clean: whatever their age
--- @clock server
--- @complexity O(C × log N), C = `count`, N = the jobs
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; work_queue/_shared.lua of the scripts folder).
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
-- A member of `parked` read back: its group, rank and job id; nil for one take.lua did
-- not write.
local function parse_parked(member)
  local length = tonumber(string.match(member, '^%x%x%x%x%x%x%x%x') or '', 16)
  local rank = length and string.match(string.sub(member, 9 + length, 24 + length), '^' .. string.rep('%d', 16) .. '$')
  rank = rank and tonumber(rank)
  if rank and rank >= 1 and rank <= 2559999999999999 and #member > 24 + length then
    return string.sub(member, 9, 8 + length), rank, string.sub(member, 25 + length)
  end
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
if #KEYS ~= 6 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 6 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local delayed = KEYS[2]
local dead = KEYS[3]
local parked = KEYS[4]
local jobs = KEYS[5]
local completed = KEYS[6]
local state = ARGV[1]
if state ~= 'waiting' and state ~= 'delayed' and state ~= 'parked' and state ~= 'dead' and state ~= 'completed' then
  return redis.error_reply('BAD_STATE must be one of waiting, delayed, parked, dead, completed, got ' .. shown(state))
end
local count = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not count or count > 100 then
  return redis.error_reply('BAD_COUNT must be an integer from 1 to 100, got ' .. shown(ARGV[2]))
end
local grace = ARGV[3] == '0' and 0 or tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not grace or grace > 1000000000000 then
  return redis.error_reply('BAD_GRACE must be whole milliseconds from 0 to 1000000000000, got ' .. shown(ARGV[3]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(waiting, '^(.+):waiting$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:waiting, got ' .. shown(waiting))
end
if delayed ~= tag_of_keys .. ':delayed' or dead ~= tag_of_keys .. ':dead' or parked ~= tag_of_keys .. ':parked' or
    jobs ~= tag_of_keys .. ':jobs' or completed ~= tag_of_keys .. ':completed' then
  for i, each in ipairs({ ':delayed', ':dead', ':parked', ':jobs', ':completed' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in waiting, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`jobs` is read first).
redis.call('HLEN', jobs)
for _, zset in ipairs({ waiting, delayed, dead, parked, completed }) do
  redis.call('ZCARD', zset)
end
local sets = { waiting = waiting, delayed = delayed, parked = parked, dead = dead, completed = completed }
local set = sets[state]
local members
if state == 'dead' or state == 'completed' then
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  members = redis.call('ZRANGE', set, '-inf', string.format('%d', now - grace), 'BYSCORE', 'LIMIT', '0',
    string.format('%d', count))
elseif grace > 0 then
  return redis.error_reply('BAD_GRACE must be 0 for ' .. state .. ' jobs, which have no end time')
else
  members = redis.call('ZRANGE', set, 0, count - 1)
end
local ids = members
if state == 'parked' then
  ids = {}
  for i, member in ipairs(members) do
    local _, _, id = parse_parked(member)
    if not id then
      return redis.error_reply('BAD_PARKED parked holds ' .. shown(member) .. ', not a parked job')
    end
    ids[i] = id
  end
end
for _, id in ipairs(ids) do
  drop_record(jobs, id)
end
if #members > 0 then
  redis.call('ZREM', set, unpack(members))
end
return #members
