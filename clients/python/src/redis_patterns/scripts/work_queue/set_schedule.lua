--- Creates or changes a schedule: a job template added to the queue at every run time.
---
--- Beyond the books (BullMQ's job schedulers, Sidekiq Enterprise's periodic jobs, Celery
--- beat). A schedule runs either `every` ms, at the times `offset + k × every` (ms since
--- the Unix epoch, server clock), or at the times of a `cron` expression in the time zone
--- `tz`, which only a caller can compute: it passes the `first` run time and `fire.lua`
--- the later ones. Each run adds the job `<schedule>:<run ms>` (see fire.lua) with
--- `payload`, `priority` and `group`. Its next run time is the score of `schedule` in
--- `due`; with `keep` and the timing unchanged (every, offset, cron, tz), the stored next
--- run is kept (an app that sets its schedules at every start misses no run and adds none
--- twice); otherwise it is `first`, or for `every` the first of its times at or after now.
--- The jobs' own retries and removal (`attempts` to `remove_on_fail`) are add.lua's.
--- Runs missed while nobody fired them: `catch_up` (see fire.lua). Each change bumps the
--- schedule's revision, so that a `fire.lua` computed for the old timing changes nothing.
--- The fields of `schedules`, per schedule `s`: `t:<s>` the timing, `every <ms> <offset>`
--- or `cron <tz> <expr>`; `o:<s>` `<revision> <catch_up> <priority>`, then a space and
--- the jobs' options as add.lua stores a job's (its o: field) when they have some; `d:<s>` the
--- payload; `g:<s>` the group (none without it). Each call appends to `schedules_wake`
--- (which then lives a minute), waking the schedulers that sleep until their next run
--- (see due.lua), so that a new or earlier run is fired on time.
--- @key schedules hash {<name>}:schedules  per schedule <s>: t timing, o revision catch_up priority, d payload, g group
--- @key due zset {<name>}:due              schedule -> its next run time (ms, server clock)
--- @key schedules_wake stream {<name>}:schedules_wake  gets an entry whenever a schedule is set
--- @arg schedule string non-empty  the schedule's name, unique in the queue
--- @arg every ms? 1..=10^12      the time between runs; empty for a cron schedule
--- @arg offset ms 0..=10^12      where the runs of `every` fall: at `offset + k × every`; below `every`, 0 for cron
--- @arg cron string len:0..=200  the cron expression (read by the caller only); '' for an `every` schedule
--- @arg tz string len:0..=64     the cron's IANA time zone (`Europe/Paris`), no spaces; '' for `every`
--- @arg catch_up uint 0..=100    runs missed while nobody fired: 0 adds only the latest, n the latest n
--- @arg priority uint 0..=255    the jobs' priority
--- @arg group string             the jobs' group; '' for none
--- @arg payload bytes            the jobs' payload
--- @arg first uint? 0..=10^15    the first run (ms, server clock); empty: the first time of `every` from now
--- @arg keep bool                keep the stored next run when the timing is unchanged
--- @arg attempts uint 0..=1000    the most deliveries of each job; 0 for the caller's `max_deliveries`
--- @arg backoff string worker|none|fixed|exponential  the delay before each retry of a job; worker: the caller's
--- @arg backoff_delay ms 0..=10^12    the fixed delay, or the exponential backoff's first one
--- @arg backoff_max ms 0..=10^12      the exponential backoff's longest delay
--- @arg remove_on_complete bool   each job dropped once completed, even while the queue keeps completed jobs
--- @arg remove_on_fail bool       each job dropped once dead, even while the queue keeps dead jobs
--- @return (bool, uint)          whether the schedule is new, and its next run time (ms)
--- @error BAD_ARGS               not 3 keys and 17 arguments
--- @error BAD_SCHEDULE           empty
--- @error BAD_EVERY              not whole milliseconds within its range (or empty)
--- @error BAD_OFFSET             not whole milliseconds within its range; or not below `every`, or not 0 for cron
--- @error BAD_CRON               not from 0 to 200 bytes long; or neither `every` nor `cron` given, or both
--- @error BAD_TZ                 not from 0 to 64 bytes long; or empty for cron, holds a space, or set for `every`
--- @error BAD_CATCH_UP           not an integer within its range
--- @error BAD_PRIORITY           not an integer within its range
--- @error BAD_FIRST              not an integer within its range (or empty); or empty for a cron schedule
--- @error BAD_KEEP               not 1 or 0
--- @error BAD_ATTEMPTS           not an integer within its range
--- @error BAD_BACKOFF            not one of its choices
--- @error BAD_BACKOFF_DELAY      not whole milliseconds within its range
--- @error BAD_BACKOFF_MAX        not whole milliseconds within its range
--- @error BAD_REMOVE_ON_COMPLETE not 1 or 0
--- @error BAD_REMOVE_ON_FAIL     not 1 or 0
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_SCHEDULES          `schedules` holds fields of `schedule` that these scripts do not write
--- @error BAD_DUE                `due` holds a run time of `schedule` that these scripts do not write
--- @uses schedule_of run_of wake_waiters retry_text shown
--- @default attempts 0          JobOptions::new: the caller's max_deliveries
--- @default backoff worker       JobOptions::new: the caller's delay
--- @default backoff_delay 0      JobOptions::new: none
--- @default backoff_max 0        JobOptions::new: none
--- @default remove_on_complete 0 JobOptions::new: kept as the queue keeps completed jobs
--- @default remove_on_fail 0     JobOptions::new: kept as the queue keeps dead jobs
--- @clock server
--- @complexity O(log S), S = the schedules
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; _shared.lua and work_queue/_shared.lua of the scripts folder).
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
-- Wakes every waiter blocked on `wake_key` (XREAD from an older id): an entry for
-- everyone (`w` = `*`). The stream keeps one entry, and goes after a minute without
-- wake-ups: a waiter blocks at most a second before it runs its script again, which then
-- answers '0-0', and the next entry wakes it.
local function wake_waiters(wake_key)
  redis.call('XADD', wake_key, 'MAXLEN', '1', '*', 'w', '*')
  redis.call('PEXPIRE', wake_key, 60000)
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
-- The options add.lua stores for a job (its o: field, as retry_of reads it) from its
-- arguments, checked by the caller: false when the job keeps the caller's and the queue's.
local function retry_text(job_attempts, job_backoff, job_backoff_delay, job_backoff_max, on_complete, on_fail)
  if job_attempts == 0 and job_backoff == 'worker' and not on_complete and not on_fail then
    return false
  end
  local kinds = { worker = 'w', none = 'f', fixed = 'f', exponential = 'e' }
  local first = job_backoff == 'none' and 0 or job_backoff_delay
  local drop = (on_complete or on_fail) and ' ' .. (on_complete and 'c' or '') .. (on_fail and 'd' or '') or ''
  return string.format('%d %s %d %d', job_attempts, kinds[job_backoff], first, job_backoff_max) .. drop
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
if #KEYS ~= 3 or #ARGV ~= 17 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 17 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local schedules = KEYS[1]
local due = KEYS[2]
local schedules_wake = KEYS[3]
local schedule = ARGV[1]
if schedule == '' then
  return redis.error_reply('BAD_SCHEDULE must not be empty')
end
local every = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if ARGV[2] ~= '' and (not every or every > 1000000000000) then
  return redis.error_reply(
      'BAD_EVERY must be whole milliseconds from 1 to 1000000000000, or empty, got ' .. shown(ARGV[2]))
end
local offset = ARGV[3] == '0' and 0 or tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not offset or offset > 1000000000000 then
  return redis.error_reply('BAD_OFFSET must be whole milliseconds from 0 to 1000000000000, got ' .. shown(ARGV[3]))
end
local cron = ARGV[4]
if #cron < 0 or #cron > 200 then
  return redis.error_reply('BAD_CRON must be from 0 to 200 bytes long, got ' .. #cron .. ' bytes')
end
local tz = ARGV[5]
if #tz < 0 or #tz > 64 then
  return redis.error_reply('BAD_TZ must be from 0 to 64 bytes long, got ' .. #tz .. ' bytes')
end
local catch_up = ARGV[6] == '0' and 0 or tonumber(string.match(ARGV[6], '^[1-9]%d*$'))
if not catch_up or catch_up > 100 then
  return redis.error_reply('BAD_CATCH_UP must be an integer from 0 to 100, got ' .. shown(ARGV[6]))
end
local priority = ARGV[7] == '0' and 0 or tonumber(string.match(ARGV[7], '^[1-9]%d*$'))
if not priority or priority > 255 then
  return redis.error_reply('BAD_PRIORITY must be an integer from 0 to 255, got ' .. shown(ARGV[7]))
end
local group = ARGV[8]
local payload = ARGV[9]
local first = ARGV[10] == '0' and 0 or tonumber(string.match(ARGV[10], '^[1-9]%d*$'))
if ARGV[10] ~= '' and (not first or first > 1000000000000000) then
  return redis.error_reply('BAD_FIRST must be an integer from 0 to 1000000000000000, or empty, got ' .. shown(ARGV[10]))
end
local keep = ARGV[11] == '1'
if not keep and ARGV[11] ~= '0' then
  return redis.error_reply('BAD_KEEP must be 1 or 0, got ' .. shown(ARGV[11]))
end
local attempts = ARGV[12] == '0' and 0 or tonumber(string.match(ARGV[12], '^[1-9]%d*$'))
if not attempts or attempts > 1000 then
  return redis.error_reply('BAD_ATTEMPTS must be an integer from 0 to 1000, got ' .. shown(ARGV[12]))
end
local backoff = ARGV[13]
if backoff ~= 'worker' and backoff ~= 'none' and backoff ~= 'fixed' and backoff ~= 'exponential' then
  return redis.error_reply('BAD_BACKOFF must be one of worker, none, fixed, exponential, got ' .. shown(backoff))
end
local backoff_delay = ARGV[14] == '0' and 0 or tonumber(string.match(ARGV[14], '^[1-9]%d*$'))
if not backoff_delay or backoff_delay > 1000000000000 then
  return redis.error_reply(
      'BAD_BACKOFF_DELAY must be whole milliseconds from 0 to 1000000000000, got ' .. shown(ARGV[14]))
end
local backoff_max = ARGV[15] == '0' and 0 or tonumber(string.match(ARGV[15], '^[1-9]%d*$'))
if not backoff_max or backoff_max > 1000000000000 then
  return redis.error_reply(
      'BAD_BACKOFF_MAX must be whole milliseconds from 0 to 1000000000000, got ' .. shown(ARGV[15]))
end
local remove_on_complete = ARGV[16] == '1'
if not remove_on_complete and ARGV[16] ~= '0' then
  return redis.error_reply('BAD_REMOVE_ON_COMPLETE must be 1 or 0, got ' .. shown(ARGV[16]))
end
local remove_on_fail = ARGV[17] == '1'
if not remove_on_fail and ARGV[17] ~= '0' then
  return redis.error_reply('BAD_REMOVE_ON_FAIL must be 1 or 0, got ' .. shown(ARGV[17]))
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

-- The timing's own checks, which the header cannot state: one of `every` and `cron`.
local timing
if every then
  if cron ~= '' then
    return redis.error_reply('BAD_CRON a schedule runs every ms or by a cron expression, not both')
  end
  if tz ~= '' then
    return redis.error_reply('BAD_TZ a time zone is for a cron schedule only, got ' .. shown(tz))
  end
  if offset >= every then
    return redis.error_reply('BAD_OFFSET offset must be below every (' .. every .. ' ms), got ' .. offset)
  end
  timing = string.format('every %d %d', every, offset)
else
  if cron == '' then
    return redis.error_reply('BAD_CRON a schedule needs every (ms) or a cron expression')
  end
  if tz == '' or string.find(tz, '%s') then
    return redis.error_reply('BAD_TZ a cron schedule needs a time zone without spaces, got ' .. shown(tz))
  end
  if offset ~= 0 then
    return redis.error_reply('BAD_OFFSET offset is for an every schedule only, got ' .. offset)
  end
  if not first then
    return redis.error_reply('BAD_FIRST a cron schedule needs its first run time from the caller')
  end
  timing = 'cron ' .. tz .. ' ' .. cron
end

-- An O(1) read: a `schedules_wake` of another type fails with WRONGTYPE before any write.
redis.call('XLEN', schedules_wake)
local config, bad = schedule_of(schedules, schedule)
if config == nil then
  return bad
end
local stored, bad_due = run_of(due, schedule, config)
if stored == false then
  return bad_due
end

local next_run
if keep and config and config.timing == timing then
  next_run = stored
elseif first then
  next_run = first
else
  -- The first time offset + k × every at or after now.
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  next_run = offset + math.ceil((now - offset) / every) * every
end
local rev = config and config.rev + 1 or 1
if rev > 1000000000000000 then
  rev = 1
end
local retry = retry_text(attempts, backoff, backoff_delay, backoff_max, remove_on_complete, remove_on_fail)
redis.call('HSET', schedules, 't:' .. schedule, timing, 'o:' .. schedule,
  string.format('%d %d %d', rev, catch_up, priority) .. (retry and ' ' .. retry or ''), 'd:' .. schedule, payload)
if group ~= '' then
  redis.call('HSET', schedules, 'g:' .. schedule, group)
else
  redis.call('HDEL', schedules, 'g:' .. schedule)
end
redis.call('ZADD', due, next_run, schedule)
wake_waiters(schedules_wake)
return { config and 0 or 1, next_run }
