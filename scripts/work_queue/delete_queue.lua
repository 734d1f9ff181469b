--- Deletes a paused queue in bounded steps: up to `count` jobs per call, then its keys.
---
--- Beyond the books, for operators (BullMQ's `obliterate`). The queue must be paused
--- (`pause.lua`), so that no worker takes a job while it goes. Jobs held by workers are
--- refused with JOBS_RUNNING unless `force`; with it, they go too, and their workers' acks
--- get LEASE_LOST. Each call removes up to `count` jobs of any state with their records;
--- the call that finds no job left deletes the rest of the queue's keys (its settings,
--- metrics, pause flag and group state included). Call it until it answers 0.
--- @key waiting zset {<name>}:waiting  job id -> rank: (255 - priority) × 10^13 + 5 × 10^12 ± arrival (- if LIFO)
--- @key delayed zset {<name>}:delayed  job id -> when it becomes waiting (ms, server clock)
--- @key leased zset {<name>}:leased    job id -> lease deadline (ms, server clock)
--- @key dead zset {<name>}:dead        job id -> when it died (ms, server clock): the dead-letter queue
--- @key parked zset {<name>}:parked    held-back jobs of groups at their limit, all at score 0 (see take.lua)
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @key groups hash {<name>}:groups  per group g: r:<g> running; p:<g>, z:<g>, s:<g>:<i>, o:<g>: its rate ring
--- @key wake zset {<name>}:wake        group -> when its rate window lets a parked job start (ms)
--- @key idle zset {<name>}:idle        group -> when its ring of start times stops mattering (ms), to drop it
--- @key signal zset {<name>}:signal    one member while a job may be ready: workers wait on it with BZPOPMIN
--- @key events stream {<name>}:events  what happened to each job: event, job, and an error or progress
--- @key results hash {<name>}:results  job id -> its result, while it is kept
--- @key kept zset {<name>}:kept        job id -> until when its result is kept (ms, server clock)
--- @key turns zset {<name>}:turns      group ('' for none) -> its turn, while groups take turns (see take.lua)
--- @key completed zset {<name>}:completed  job id -> when it completed (ms, server clock), while kept
--- @key blocked zset {<name>}:blocked  flow parent id -> when it was added (ms, server clock), while blocked
--- @arg count uint 1..=100       the most jobs removed in this call
--- @arg force bool               whether jobs held by workers go too
--- @return uint                  the jobs left; 0 once the queue is deleted
--- @error BAD_ARGS               not 16 keys and 2 arguments
--- @error BAD_COUNT              not an integer within its range
--- @error BAD_FORCE              not 1 or 0
--- @error BAD_KEYS               a key not named as its template says
--- @error NOT_PAUSED             the queue is running: pause it first
--- @error JOBS_RUNNING           workers hold jobs, and `force` is 0
--- @error BAD_PARKED             `parked` holds a member that take.lua did not write; nothing was written
--- @uses drop_record parse_parked shown
--- @complexity O(C × log N + K), C = `count`, N = the jobs, K = the fields of the last keys (freed lazily)
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
if #KEYS ~= 16 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 16 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
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
local signal = KEYS[10]
local events = KEYS[11]
local results = KEYS[12]
local kept = KEYS[13]
local turns = KEYS[14]
local completed = KEYS[15]
local blocked = KEYS[16]
local count = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not count or count > 100 then
  return redis.error_reply('BAD_COUNT must be an integer from 1 to 100, got ' .. shown(ARGV[1]))
end
local force = ARGV[2] == '1'
if not force and ARGV[2] ~= '0' then
  return redis.error_reply('BAD_FORCE must be 1 or 0, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(waiting, '^(.+):waiting$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:waiting, got ' .. shown(waiting))
end
if delayed ~= tag_of_keys .. ':delayed' or leased ~= tag_of_keys .. ':leased' or dead ~= tag_of_keys .. ':dead' or
    parked ~= tag_of_keys .. ':parked' or jobs ~= tag_of_keys .. ':jobs' or groups ~= tag_of_keys .. ':groups' or
    wake ~= tag_of_keys .. ':wake' or idle ~= tag_of_keys .. ':idle' or signal ~= tag_of_keys .. ':signal' or
    events ~= tag_of_keys .. ':events' or results ~= tag_of_keys .. ':results' or kept ~= tag_of_keys .. ':kept' or
    turns ~= tag_of_keys .. ':turns' or completed ~= tag_of_keys .. ':completed' or
    blocked ~= tag_of_keys .. ':blocked' then
  for i, each in ipairs({ ':delayed', ':leased', ':dead', ':parked', ':jobs', ':groups', ':wake', ':idle', ':signal',
      ':events', ':results', ':kept', ':turns', ':completed', ':blocked' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in waiting, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`jobs` is read first).
local paused = redis.call('HGET', jobs, '#paused')
redis.call('HLEN', groups)
redis.call('XLEN', events)
redis.call('HLEN', results)
redis.call('ZCARD', kept)
redis.call('ZCARD', turns)
local sets = { waiting, delayed, parked, dead, completed, blocked, leased }
local left = 0
for _, zset in ipairs({ waiting, delayed, leased, dead, parked, completed, blocked, wake, idle, signal }) do
  local n = redis.call('ZCARD', zset)
  if zset ~= wake and zset ~= idle and zset ~= signal then
    left = left + n
  end
end
if not paused and (left > 0 or redis.call('EXISTS', jobs, groups, wake, idle, signal, turns) > 0) then
  return redis.error_reply('NOT_PAUSED the queue is running: pause it before deleting it')
end
local held = redis.call('ZCARD', leased)
if held > 0 and not force then
  return redis.error_reply('JOBS_RUNNING workers hold ' .. held .. ' job(s): wait for them, or force')
end
-- Read (and checked) first, then removed.
local plan = {}
local budget = count
for _, zset in ipairs(sets) do
  if budget == 0 then
    break
  end
  local members = redis.call('ZRANGE', zset, 0, budget - 1)
  local ids = members
  if zset == parked then
    ids = {}
    for i, member in ipairs(members) do
      local _, _, id = parse_parked(member)
      if not id then
        return redis.error_reply('BAD_PARKED parked holds ' .. shown(member) .. ', not a parked job')
      end
      ids[i] = id
    end
  end
  plan[#plan + 1] = { zset = zset, members = members, ids = ids }
  budget = budget - #members
end
for _, step in ipairs(plan) do
  for _, id in ipairs(step.ids) do
    drop_record(jobs, id)
  end
  if #step.members > 0 then
    redis.call('ZREM', step.zset, unpack(step.members))
  end
end
left = left - (count - budget)
if left == 0 then
  -- UNLINK frees a large hash (many groups' rings, a long metrics window) off the main thread.
  redis.call('UNLINK', jobs, groups, wake, idle, signal, events, results, kept, turns)
end
return left
