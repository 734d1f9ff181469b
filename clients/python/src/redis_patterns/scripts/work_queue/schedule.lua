#!lua flags=no-writes
--- Reads one schedule: its next run time, its timing and its job template.
---
--- Beyond the books. See set_schedule.lua for what each part means.
--- @key schedules hash {<name>}:schedules  per schedule <s>: t timing, o revision catch_up priority, d payload, g group
--- @key due zset {<name>}:due              schedule -> its next run time (ms, server clock)
--- @arg schedule string non-empty  the schedule's name
--- @return (string, uint, uint, uint, string, string, uint, uint, string?, bytes)?  nil when there is no such
---                               schedule; else its name, next run time (ms, server clock), every (0 for cron),
---                               offset, cron expression and time zone ('' for every), catch_up, priority, group
---                               (nil for none) and payload
--- @error BAD_ARGS               not 2 keys and 1 argument
--- @error BAD_SCHEDULE           empty
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_SCHEDULES          `schedules` holds fields of `schedule` that these scripts do not write
--- @error BAD_DUE                `due` holds a run time of `schedule` that these scripts do not write
--- @uses schedule_of run_of schedule_row
--- @complexity O(1)
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
-- A job's own options, `stored` (a string) as add.lua writes them in its o: field:
-- '<attempts> <backoff> <delay> <max>', then ' c', ' d' or ' cd' when the job is not to
-- be kept once completed (c) or dead (d), whatever the queue keeps; attempts 0 for the
-- caller's most deliveries, and backoff w (the caller's delay), f (a fixed `delay`) or e
-- (exponential from `delay` up to `max`). Nil for a value add.lua does not write.
local function retry_parts(stored)
  local attempts, backoff, delay, max, drop = string.match(stored, '^(%d+) ([wfe]) (%d+) (%d+)(.*)$')
  attempts = attempts and safe_integer(attempts, 0, 1000)
  delay = delay and safe_integer(delay, 0, 1000000000000)
  max = max and safe_integer(max, 0, 1000000000000)
  if attempts and delay and max and (drop == '' or drop == ' c' or drop == ' d' or drop == ' cd') then
    return { attempts = attempts, backoff = backoff, delay = delay, max = max,
      drop_completed = string.find(drop, 'c', 1, true) ~= nil, drop_dead = string.find(drop, 'd', 1, true) ~= nil }
  end
end
-- The schedule `name` as set_schedule.lua keeps it in `schedules_hash` (t:<name> its
-- timing, o:<name> its revision, catch-up and priority, then the jobs' own options as
-- add.lua stores a job's when they have some, d:<name> the jobs' payload, g:<name> their
-- group): a table (`retry` the jobs' options, or false); false when there is none; nil
-- and a BAD_SCHEDULES error reply for fields these scripts do not write. Reads only.
local function schedule_of(schedules_hash, name)
  local found_timing, found_options, found_payload, found_group = unpack(redis.call('HMGET', schedules_hash,
    't:' .. name, 'o:' .. name, 'd:' .. name, 'g:' .. name))
  if not (found_timing or found_options or found_payload or found_group) then
    return false
  end
  local s = { timing = found_timing, every = 0, offset = 0, tz = '', cron = '', payload = found_payload,
    group = found_group or '' }
  local found_every, found_offset = string.match(found_timing or '', '^every (%d+) (%d+)$')
  if found_every then
    s.every, s.offset = safe_integer(found_every, 1, 1000000000000), safe_integer(found_offset, 0, 999999999999)
  else
    s.tz, s.cron = string.match(found_timing or '', '^cron (%S+) (.+)$')
  end
  -- Then, for jobs with options of their own, those options as add.lua stores a job's.
  local found_rev, found_catch_up, found_priority, found_retry = string.match(found_options or '',
    '^(%d+) (%d+) (%d+)(.*)$')
  s.rev = found_rev and safe_integer(found_rev, 1, 1000000000000000)
  s.catch_up = found_catch_up and safe_integer(found_catch_up, 0, 100)
  s.priority = found_priority and safe_integer(found_priority, 0, 255)
  s.retry = found_retry ~= '' and string.match(found_retry or '', '^ (.+)$')
  if not (s.every and s.offset and s.offset < math.max(s.every, 1) and s.tz and s.rev and s.catch_up and s.priority
      and (found_retry == '' or (s.retry and retry_parts(s.retry))) and found_payload and found_group ~= '') then
    return nil, redis.error_reply('BAD_SCHEDULES the schedule ' .. shown(name) .. ' is ' .. shown(found_timing or '')
      .. ' ' .. shown(found_options or '') .. ', not what set_schedule.lua writes')
  end
  return s
end
-- The next run time of schedule `name` in `due_set` (ms, server clock): nil when it has
-- none; false and a BAD_DUE error reply for a score set_schedule.lua does not write, or
-- for a run time of a schedule without its fields (`config`, as schedule_of read it).
local function run_of(due_set, name, config)
  local score = redis.call('ZSCORE', due_set, name)
  local found_run = score and safe_integer(score, 0, 1000000000000000)
  if (score and not found_run) or (not config) ~= (not score) then
    return false, redis.error_reply('BAD_DUE the run time of schedule ' .. shown(name) .. ' is '
      .. shown(score or 'missing') .. (config and '' or ' with no schedule') .. ', not what set_schedule.lua writes')
  end
  -- ZSCORE answers false for no member: nil here.
  return found_run or nil
end
-- The reply row of schedule `name` (as schedule_of read it) whose next run is `run`.
local function schedule_row(name, config, run)
  return { name, run, config.every, config.offset, config.cron, config.tz, config.catch_up, config.priority,
    config.group ~= '' and config.group or false, config.payload }
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local schedules = KEYS[1]
local due = KEYS[2]
local schedule = ARGV[1]
if schedule == '' then
  return redis.error_reply('BAD_SCHEDULE must not be empty')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(schedules, '^(.+):schedules$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:schedules, got ' .. shown(schedules))
end
if due ~= tag_of_keys .. ':due' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:due with <name> as in schedules, got ' .. shown(due))
end
-- End of the generated input checks.
local config, bad = schedule_of(schedules, schedule)
if config == nil then
  return bad
end
local run, bad_due = run_of(due, schedule, config)
if run == false then
  return bad_due
end
if not config then
  return nil
end
return schedule_row(schedule, config, run)
