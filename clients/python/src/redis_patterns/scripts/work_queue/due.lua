#!lua flags=no-writes
--- Reads the schedules whose next run time has come, for a scheduler loop to fire.
---
--- Beyond the books. Answers the server's clock, the earliest next run time after now (to
--- sleep until; nil for none), and up to `limit` schedules due, earliest first, each with
--- what fire.lua needs: its name, next run time and revision, and to compute a cron
--- schedule's times, its expression, time zone and catch-up (an `every` schedule has its
--- `every` and computes its own). Every scheduler may read them; fire.lua lets one fire
--- each run. It also answers the last id of `schedules_wake`, which set_schedule.lua
--- appends to: a scheduler with nothing due blocks on it
--- (`XREAD BLOCK <ms> STREAMS <schedules_wake> <id>`) until the earliest next run, and a
--- schedule set meanwhile wakes it at once.
--- @key schedules hash {<name>}:schedules  per schedule <s>: t timing, o revision catch_up priority, d payload, g group
--- @key due zset {<name>}:due              schedule -> its next run time (ms, server clock)
--- @key schedules_wake stream {<name>}:schedules_wake  gets an entry whenever a schedule is set
--- @arg limit uint 1..=100       the most schedules answered
--- @return (uint, uint?, [(string, uint, uint, uint, string, string, uint)], string)  now (ms, server clock),
---                               the earliest next run after now, per schedule due: name, run time, revision,
---                               every (0 for cron), cron expression and time zone ('' for every), catch_up;
---                               and the last id of `schedules_wake` ('0-0' for none)
--- @error BAD_ARGS               not 3 keys and 1 argument
--- @error BAD_LIMIT              not an integer within its range
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_SCHEDULES          `schedules` holds fields of a due schedule that these scripts do not write
--- @error BAD_DUE                `due` holds a run time that these scripts do not write
--- @uses schedule_of run_of safe_integer shown
--- @clock server
--- @complexity O(log S + M), S = the schedules, M = `limit`
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 3 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local schedules = KEYS[1]
local due = KEYS[2]
local schedules_wake = KEYS[3]
local limit = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not limit or limit > 100 then
  return redis.error_reply('BAD_LIMIT must be an integer from 1 to 100, got ' .. shown(ARGV[1]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(schedules, '^(.+):schedules$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:schedules, got ' .. shown(schedules))
end
if due ~= tag_of_keys .. ':due' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:due with <name> as in schedules, got ' .. shown(due))
end
if schedules_wake ~= tag_of_keys .. ':schedules_wake' then
  return redis.error_reply(
      'BAD_KEYS KEYS[3] must be {<name>}:schedules_wake with <name> as in schedules, got ' .. shown(schedules_wake))
end
-- End of the generated input checks.
-- An O(1) read: a `schedules` of another type fails with WRONGTYPE, even with nothing due.
redis.call('HLEN', schedules)
local last_wake = redis.call('XREVRANGE', schedules_wake, '+', '-', 'COUNT', 1)[1]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local members = redis.call('ZRANGE', due, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
local rows = {}
for i, name in ipairs(members) do
  local config, bad = schedule_of(schedules, name)
  if config == nil then
    return bad
  end
  local run, bad_due = run_of(due, name, config)
  if not run then
    return bad_due
  end
  rows[i] = { name, run, config.rev, config.every, config.cron, config.tz, config.catch_up }
end
local later = redis.call('ZRANGE', due, '(' .. now, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
local next_run = later[2] and safe_integer(later[2], 0, 1000000000000000)
if later[2] and not next_run then
  return redis.error_reply('BAD_DUE the run time of schedule ' .. shown(later[1]) .. ' is ' .. shown(later[2])
    .. ', not what set_schedule.lua writes')
end
return { now, next_run or false, rows, last_wake and last_wake[1] or '0-0' }
