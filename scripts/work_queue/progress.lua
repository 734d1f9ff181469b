--- Reports a running job's progress: `job.lua` shows it, and the events carry it.
---
--- Beyond the books (BullMQ's `job.updateProgress`). Only the holder of the job's current
--- lease can report (see `ack.lua`). The report replaces the last one and stays with the
--- job until it ends; what it holds is the app's (a percentage, or JSON), at most 4 KiB.
--- With events on (`configure.lua`), it is appended to `events` as `progress`.
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @key events stream {<name>}:events  what happened to each job: event, job, and an error or progress
--- @arg id string non-empty      the job's id
--- @arg token string non-empty   the lease token `take.lua` returned with the job
--- @arg progress bytes len:1..=4096  the report
--- @return string?               the event's id in `events`; nil when events are off
--- @error BAD_ARGS               not 2 keys and 3 arguments
--- @error BAD_ID                 empty
--- @error BAD_TOKEN              empty
--- @error BAD_PROGRESS           not from 1 to 4096 bytes long, or longer than 4096 bytes
--- @error BAD_KEYS               a key not named as its template says
--- @error LEASE_LOST             the job is not held under `token` (acked, handed to another worker, or gone)
--- @error BAD_JOBS               `jobs` holds settings these scripts did not write; nothing was written
--- @uses held_group settings_of emit
--- @complexity O(1)
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
-- The group of job `job_id` (false for none) when it is held under `job_token`, the
-- queue's stored settings (#settings, read in the same call: see settings_of), and the
-- job's parent link (its P: field, false for none: see parent_of); nil and a LEASE_LOST
-- error reply when it is not held so. Reads only.
local function held_group(jobs_hash, job_id, job_token)
  local state, held, group, stored, link = unpack(redis.call('HMGET', jobs_hash, 's:' .. job_id, 't:' .. job_id,
    'g:' .. job_id, '#settings', 'P:' .. job_id))
  -- A token is text: the caller's random part and the delivery count (see take.lua).
  if held ~= job_token then
    return nil, redis.error_reply('LEASE_LOST job ' .. shown(job_id) .. ' is ' .. (state or 'gone')
      .. ', not held under this token')
  end
  return group, nil, stored, link
end
-- The queue's settings from `stored`, the field #settings of the jobs hash as the caller
-- read it (with the other fields it reads there, to save a call): false for the defaults
-- (configure.lua never ran); the form packed_settings writes; or the text earlier
-- versions wrote, thirteen whole numbers (or the first twelve or nine), which
-- configure.lua rewrites in the new form. Nil and a BAD_JOBS error reply for a value
-- configure.lua does not write.
local function settings_of(stored)
  local v = { 0, 0, 1000, 0, 0, 1000, 10000, 15552000000, 0, 0, 3600000, 16384, 0 }
  if stored then
    local found = {}
    if string.find(stored, '^%d') then
      -- One pattern match (in C) for the whole text; digits only, at most 16 of them:
      -- exact in a Lua number.
      local nine = '^(%d+) (%d+) (%d+) (%d+) (%d+) (%d+) (%d+) (%d+) (%d+)'
      found = { string.match(stored, nine .. ' (%d+) (%d+) (%d+) (%d+)$') }
      if #found == 0 then
        found = { string.match(stored, nine .. ' (%d+) (%d+) (%d+)$') }
      end
      if #found == 0 then
        found = { string.match(stored, nine .. '$') }
      end
      for i = 1, #found do
        found[i] = #found[i] <= 16 and tonumber(found[i])
      end
    else
      -- One object, the whole value (unpack_one answers -1 for the offset after it).
      local ok, after, packed = pcall(cmsgpack.unpack_one, stored)
      if ok and after == -1 and type(packed) == 'table' and packed[1] == 2 and #packed == 14 then
        for i = 1, 13 do
          found[i] = packed[i + 1]
        end
      end
    end
    local low = { 0, 0, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0 }
    local high = { 1000000, 1000, 10000000000, 1000000, 1000, 10000000000, 10000000, 1000000000000, 1440, 100000,
      2592000000, 16384, 1 }
    for i = 1, #found do
      local n = found[i]
      if not (type(n) == 'number' and n >= low[i] and n <= high[i] and n % 1 == 0) then
        found = {}
        break
      end
      v[i] = n
    end
    if #found == 0 then
      return nil, redis.error_reply('BAD_JOBS the settings #settings are ' .. shown(stored)
        .. ', not what configure.lua writes')
    end
  end
  return {
    group_concurrency = v[1], group_rate = v[2], group_period = v[3],
    queue_concurrency = v[4], queue_rate = v[5], queue_period = v[6],
    dead_max = v[7], dead_age = v[8], metrics_minutes = v[9],
    events_max = v[10], result_ttl = v[11], result_max = v[12], group_turns = v[13],
  }
end
-- Appends what happened to job `job_id` to the queue's events stream, capped at `cap`
-- entries exactly (the oldest go), and answers the entry's id; false when `cap` is 0
-- (events off). `detail` (an error or a progress report) goes as a third field when there
-- is one. The caller checked the stream's type before its first write (XLEN).
local function emit(events_stream, cap, kind, job_id, detail_name, detail)
  if cap == 0 then
    return false
  end
  if detail_name then
    return redis.call('XADD', events_stream, 'MAXLEN', string.format('%d', cap), '*', 'event', kind, 'job', job_id,
      detail_name, detail)
  end
  return redis.call('XADD', events_stream, 'MAXLEN', string.format('%d', cap), '*', 'event', kind, 'job', job_id)
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local jobs = KEYS[1]
local events = KEYS[2]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID must not be empty')
end
local token = ARGV[2]
if token == '' then
  return redis.error_reply('BAD_TOKEN must not be empty')
end
local progress = ARGV[3]
if #progress < 1 or #progress > 4096 then
  return redis.error_reply('BAD_PROGRESS must be from 1 to 4096 bytes long, got ' .. #progress .. ' bytes')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(jobs, '^(.+):jobs$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:jobs, got ' .. shown(jobs))
end
if events ~= tag_of_keys .. ':events' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:events with <name> as in jobs, got ' .. shown(events))
end
-- End of the generated input checks.
local _, bad, stored_settings = held_group(jobs, id, token)
if bad then
  return bad
end
local settings
settings, bad = settings_of(stored_settings)
if bad then
  return bad
end
if settings.events_max > 0 then
  redis.call('XLEN', events)
end
redis.call('HSET', jobs, 'p:' .. id, progress)
return emit(events, settings.events_max, 'progress', id, 'progress', progress)
