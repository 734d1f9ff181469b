--- Gives a held job back and holds its group's jobs back for `hold`: for an upstream's 429.
---
--- Beyond the books (BullMQ Pro's `rateLimitGroup`). A handler whose upstream answers "too
--- many requests" for the job's group calls this with the job's token instead of `nack.lua`:
--- the job is parked at its rank with its delivery not counted, its group frees a slot, and
--- `take.lua` parks every job of the group it meets until `hold` has passed (u:<g> in
--- `groups`), then hands them out in their order. Other groups are not held back. Asking
--- again extends the hold; a shorter hold never shortens a longer one.
--- @key leased zset {<name>}:leased    job id -> lease deadline (ms, server clock)
--- @key parked zset {<name>}:parked    held-back jobs of groups at their limit, all at score 0 (see take.lua)
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @key groups hash {<name>}:groups  per group g: r:<g> running, u:<g> held back until; its rate ring (see take.lua)
--- @key wake zset {<name>}:wake        group -> when its rate window lets a parked job start (ms)
--- @key idle zset {<name>}:idle        group -> when its ring of start times stops mattering (ms), to drop it
--- @arg id string non-empty      the job's id
--- @arg token string non-empty   the lease token `take.lua` returned with the job
--- @arg hold ms 1..=10^10        how long the group's jobs are held back, from now
--- @return int                   until when the group is held back (ms, server clock)
--- @error BAD_ARGS               not 6 keys and 3 arguments
--- @error BAD_ID                 empty
--- @error BAD_TOKEN              empty
--- @error BAD_HOLD               not whole milliseconds within its range
--- @error BAD_KEYS               a key not named as its template says
--- @error LEASE_LOST             the job is not held under `token` (acked, handed to another worker, or gone)
--- @error NO_GROUP               the job has no group: nack it instead
--- @error BAD_JOBS               `jobs` holds a field of the job these scripts did not write; nothing was written
--- @error BAD_GROUPS             `groups` holds a count or time these scripts do not write; nothing was written
--- @uses held_group running_of parked_member safe_integer shown
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
-- The running count of `group`; nil and an error reply for a count these scripts did not
-- write (they write a count of jobs, which one more or one fewer keeps a count).
local function running_of(groups_hash, group)
  local running = redis.call('HGET', groups_hash, 'r:' .. group)
  if running and not safe_integer(running, 0, 999999999999999) then
    return nil, redis.error_reply('BAD_GROUPS the running count of group ' .. shown(group) .. ' is '
      .. shown(running) .. ', not what these scripts write')
  end
  return tonumber(running or '0')
end
-- The group of job `job_id` (false for none) when it is held under `job_token`, the
-- queue's stored settings (#settings, read in the same call: see settings_of), the job's
-- parent link (its P: field, false for none: see parent_of) and its own options (its o:
-- field, false for none: see retry_of); nil and a LEASE_LOST error reply when it is not
-- held so. Reads only.
local function held_group(jobs_hash, job_id, job_token)
  local state, held, group, stored, link, options = unpack(redis.call('HMGET', jobs_hash, 's:' .. job_id,
    't:' .. job_id, 'g:' .. job_id, '#settings', 'P:' .. job_id, 'o:' .. job_id))
  -- A token is text: the caller's random part and the delivery count (see take.lua).
  if held ~= job_token then
    return nil, redis.error_reply('LEASE_LOST job ' .. shown(job_id) .. ' is ' .. (state or 'gone')
      .. ', not held under this token')
  end
  return group, nil, stored, link, options
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 6 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 6 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local leased = KEYS[1]
local parked = KEYS[2]
local jobs = KEYS[3]
local groups = KEYS[4]
local wake = KEYS[5]
local idle = KEYS[6]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID must not be empty')
end
local token = ARGV[2]
if token == '' then
  return redis.error_reply('BAD_TOKEN must not be empty')
end
local hold = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not hold or hold > 10000000000 then
  return redis.error_reply('BAD_HOLD must be whole milliseconds from 1 to 10000000000, got ' .. shown(ARGV[3]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(leased, '^(.+):leased$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:leased, got ' .. shown(leased))
end
if parked ~= tag_of_keys .. ':parked' or jobs ~= tag_of_keys .. ':jobs' or groups ~= tag_of_keys .. ':groups' or
    wake ~= tag_of_keys .. ':wake' or idle ~= tag_of_keys .. ':idle' then
  for i, each in ipairs({ ':parked', ':jobs', ':groups', ':wake', ':idle' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in leased, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`jobs` is read first).
for _, zset in ipairs({ leased, parked, wake, idle }) do
  redis.call('ZCARD', zset)
end
redis.call('HLEN', groups)

local group, bad = held_group(jobs, id, token)
if bad then
  return bad
end
if not group then
  return redis.error_reply('NO_GROUP job ' .. shown(id) .. ' has no group to hold back')
end
-- Everything that can be refused is read before the first write.
local deliveries, rank = unpack(redis.call('HMGET', jobs, 'n:' .. id, 'r:' .. id))
if not (deliveries and safe_integer(deliveries, 1, 999999999999999)) then
  return redis.error_reply('BAD_JOBS job ' .. shown(id) .. ' has the delivery count ' .. shown(deliveries or ''))
end
if not (rank and safe_integer(rank, 1, 2559999999999999)) then
  return redis.error_reply('BAD_JOBS job ' .. shown(id) .. ' has the rank ' .. shown(rank or ''))
end
local _, bad_count = running_of(groups, group)
if bad_count then
  return bad_count
end
local held_until = redis.call('HGET', groups, 'u:' .. group)
if held_until and not safe_integer(held_until, 0, 999999999999999) then
  return redis.error_reply('BAD_GROUPS the hold-back time of group ' .. shown(group) .. ' is '
    .. shown(held_until) .. ', not what these scripts write')
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local until_ms = math.max(now + hold, tonumber(held_until or '0'))
redis.call('ZREM', leased, id)
redis.call('HINCRBY', jobs, 'n:' .. id, -1)
redis.call('HDEL', jobs, 't:' .. id)
redis.call('HSET', jobs, 's:' .. id, 'parked')
redis.call('ZADD', parked, 0, parked_member(group, tonumber(rank), id))
-- Its slot is free, but the group's parked jobs stay parked: it is held back.
if redis.call('HINCRBY', groups, 'r:' .. group, -1) <= 0 then
  redis.call('HDEL', groups, 'r:' .. group)
end
redis.call('HSET', groups, 'u:' .. group, until_ms)
-- take.lua unparks the group's jobs then, and drops u:<g> once it has passed.
redis.call('ZADD', wake, 'LT', until_ms, group)
redis.call('ZADD', idle, 'GT', until_ms, group)
return until_ms
