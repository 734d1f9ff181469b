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
-- Whether `n` is a whole number from `low` to `high` (a value unpacked or converted from
-- stored data, of any type).
local function whole_within(n, low, high)
  return type(n) == 'number' and n >= low and n <= high and n % 1 == 0
end
-- The queue's settings from `stored`, the field #settings of the jobs hash as the caller
-- read it (with the other fields it reads there, to save a call): false for the defaults
-- (configure.lua never ran); the form packed_settings writes; or what earlier versions
-- wrote, its form 2 (the first thirteen settings) or text (thirteen whole numbers, or the
-- first twelve or nine), which configure.lua rewrites in the new form; settings missing
-- from an earlier form are at their defaults. Nil and a BAD_JOBS error reply for a value
-- configure.lua does not write.
local function settings_of(stored)
  if not stored then
    return {
      group_concurrency = 0, group_rate = 0, group_period = 1000, queue_concurrency = 0, queue_rate = 0,
      queue_period = 1000, dead_max = 10000, dead_age = 15552000000, metrics_minutes = 0, events_max = 0,
      result_ttl = 3600000, result_max = 16384, group_turns = 0, completed_max = 0, completed_age = 604800000,
    }
  end
  -- The fifteen settings are v[o + 1] to v[o + 15].
  local v, o = {}, 0
  if string.find(stored, '^%d') then
    -- One pattern match (in C) for the whole text; digits only, at most 16 of them:
    -- exact in a Lua number.
    local nine = '^(%d+) (%d+) (%d+) (%d+) (%d+) (%d+) (%d+) (%d+) (%d+)'
    v = { string.match(stored, nine .. ' (%d+) (%d+) (%d+) (%d+)$') }
    if #v == 0 then
      v = { string.match(stored, nine .. ' (%d+) (%d+) (%d+)$') }
    end
    if #v == 0 then
      v = { string.match(stored, nine .. '$') }
    end
    for i = 1, #v do
      v[i] = #v[i] <= 16 and tonumber(v[i])
    end
  else
    -- One object, the whole value (unpack_one answers -1 for the offset after it): the
    -- form 3 of fifteen settings, or the form 2 of the first thirteen.
    local ok, after, packed = pcall(cmsgpack.unpack_one, stored)
    if ok and after == -1 and type(packed) == 'table' and ((packed[1] == 3 and #packed == 16)
        or (packed[1] == 2 and #packed == 14)) then
      v, o = packed, 1
    end
  end
  if #v - o == 9 or #v - o == 12 or #v - o == 13 then
    -- The settings that earlier versions did not have yet, at their defaults.
    local defaults = settings_of(false)
    local later = { defaults.events_max, defaults.result_ttl, defaults.result_max, defaults.group_turns,
      defaults.completed_max, defaults.completed_age }
    for i = #v - o + 1, 15 do
      v[o + i] = later[i - 9]
    end
  end
  if not (whole_within(v[o + 1], 0, 1000000) and whole_within(v[o + 2], 0, 1000)
      and whole_within(v[o + 3], 1, 10000000000) and whole_within(v[o + 4], 0, 1000000)
      and whole_within(v[o + 5], 0, 1000) and whole_within(v[o + 6], 1, 10000000000)
      and whole_within(v[o + 7], 1, 10000000) and whole_within(v[o + 8], 1, 1000000000000)
      and whole_within(v[o + 9], 0, 1440) and whole_within(v[o + 10], 0, 100000)
      and whole_within(v[o + 11], 1, 2592000000) and whole_within(v[o + 12], 1, 16384)
      and whole_within(v[o + 13], 0, 1) and whole_within(v[o + 14], 0, 10000000)
      and whole_within(v[o + 15], 1, 1000000000000)) then
    return nil, redis.error_reply('BAD_JOBS the settings #settings are ' .. shown(stored)
      .. ', not what configure.lua writes')
  end
  return {
    group_concurrency = v[o + 1], group_rate = v[o + 2], group_period = v[o + 3],
    queue_concurrency = v[o + 4], queue_rate = v[o + 5], queue_period = v[o + 6],
    dead_max = v[o + 7], dead_age = v[o + 8], metrics_minutes = v[o + 9],
    events_max = v[o + 10], result_ttl = v[o + 11], result_max = v[o + 12], group_turns = v[o + 13],
    completed_max = v[o + 14], completed_age = v[o + 15],
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
