--- Fires one run of a schedule: adds its job(s) and moves its next run time, once.
---
--- Beyond the books: the step that makes any number of schedulers fire each run once
--- (BullMQ#453 and #3165: its schedulers fired twice; Celery beat must be kept single by
--- hand). The caller read `run` (the schedule's next run time) and `rev` (its revision)
--- with due.lua; the call fires only while both are still what `schedule` holds
--- (compare-and-set) and `run` is not after the server's clock. A caller that lost the
--- race gets 'already_fired' and nothing changes. Each run time `t` fired adds the job
--- `<schedule>:<t>` exactly as add.lua does (its payload, priority, group and own options
--- from the schedule, no delay); a replayed run finds its job by id and adds nothing. While the
--- queue's groups take turns, each job waits for its group's turn as add.lua says.
---
--- The run times due are `run` and the later ones up to now. An `every` schedule computes
--- them (`run + k × every`); a cron schedule takes them from the caller: `times`, the
--- cron's times after `run` in order (at least the latest `catch_up` ones up to now and
--- one after now: only the caller can read a cron expression). Missed runs: of the times
--- due, only the latest is added (`catch_up` 0), or the latest `catch_up` (at most 100);
--- the others are skipped and counted. The next run time is the first time after now;
--- when `times` hold none ('more_times'), nothing changes and the caller computes more.
--- @key waiting zset {<name>}:waiting    job id -> rank: (255 - priority) × 10^13 + 5 × 10^12 ± arrival (- if LIFO)
--- @key delayed zset {<name>}:delayed    job id -> when it becomes waiting (ms, server clock)
--- @key parked zset {<name>}:parked      held-back jobs, all at score 0 (see take.lua)
--- @key jobs hash {<name>}:jobs          <x>:<id>: d payload, s state, r rank, n deliveries, g group, a ready
--- @key signal zset {<name>}:signal      one member while a job may be ready: workers wait on it with BZPOPMIN
--- @key schedules hash {<name>}:schedules  per schedule <s>: t timing, o revision catch_up priority, d payload, g group
--- @key due zset {<name>}:due            schedule -> its next run time (ms, server clock)
--- @key turns zset {<name>}:turns        group ('' for none) -> its turn, while groups take turns (see take.lua)
--- @arg schedule string non-empty  the schedule's name
--- @arg run uint 0..=10^15       the next run time the caller read (ms, server clock)
--- @arg rev uint 1..=10^15       the schedule's revision the caller read
--- @arg trace string len:0..=1024  the firing's W3C trace context, for each job added; '' for none
--- @arg times uint... 0..=101 0..=10^15  a cron schedule's times after `run`, in order; none for `every`
--- @return (string, [int], uint, uint, uint)  'fired', 'already_fired' (the run was fired, or the schedule
---                               changed or went), 'not_due' (`run` is after now) or 'more_times'; the run times
---                               whose jobs were added, how many were there already, how many were skipped,
---                               and the schedule's next run time (0 when it went)
--- @error BAD_ARGS               not 8 keys and from 4 to 105 arguments
--- @error BAD_SCHEDULE           empty
--- @error BAD_RUN                not an integer within its range
--- @error BAD_REV                not an integer within its range
--- @error BAD_TRACE              not from 0 to 1024 bytes long
--- @error BAD_TIMES a value is not an integer within its range; or any for `every`, none for cron, or out of order
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_JOBS               `jobs` holds an arrival counter (#seq) or settings these scripts do not write
--- @error BAD_SCHEDULES          `schedules` holds fields of `schedule` that these scripts do not write
--- @error BAD_DUE                `due` holds a run time of `schedule` that these scripts do not write
--- @error BAD_TURNS              `turns` holds a score that is no turn number
--- @uses add_job schedule_of run_of turn_plan wait_turn
--- @default trace ''             none (with the `otel` feature, the span of the call)
--- @clock server
--- @complexity O(C log N), C = the runs added (at most 100), N = the jobs
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
-- Tells workers blocked on `signal_key` (BZPOPMIN) that a job may be ready: the key holds
-- at most one member, so it stays one member however many jobs wait.
local function wake_workers(signal_key)
  redis.call('ZADD', signal_key, '0', 'ready')
end
-- The rank of a job of `priority` behind every job of that priority now, or with `lifo`
-- ahead of them: the priority's band of 10^13 ranks, halved at 5 × 10^12, plus or minus
-- the next arrival number (#seq in the jobs hash, which the caller checked is a count),
-- which wraps after 5 × 10^12 so that a rank stays within its band and exact in a double.
local function next_rank(jobs_hash, job_priority, lifo)
  local seq = redis.call('HINCRBY', jobs_hash, '#seq', '1')
  if seq >= 5000000000000 then
    seq = 1
    redis.call('HSET', jobs_hash, '#seq', '1')
  end
  if lifo then
    seq = -seq
  end
  return (255 - job_priority) * 10000000000000 + 5000000000000 + seq
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
-- Adds job `job_id` as add.lua does (see its header): unless a job with that id is in the
-- queue, it waits in `waiting_set` (waking workers on `signal_key`) or, for a `job_delay` > 0
-- ms, in `delayed_set`; with `job_group` ('' for none), its retry options `job_retry`
-- (retry_of's text, or false for none), ahead of its priority's jobs with `job_lifo`, with
-- its producer's trace context `job_trace` (nil or '' for none) in c:, and stamped `a:` (when
-- first ready). Reads and checks (the arrival counter, the settings) before its first write.
-- Answers { 1, state } for a job added, { 0, state } with the state of the job already
-- there; nil and a BAD_JOBS error reply for a counter or settings these scripts do not
-- write.
local function add_job(waiting_set, delayed_set, jobs_hash, signal_key, job_id, job_payload, job_priority, job_delay,
    job_group, known_settings, job_retry, job_lifo, job_trace)
  -- O(1) reads that fail with WRONGTYPE before anything is written (`jobs` is read first).
  redis.call('ZCARD', waiting_set)
  redis.call('ZCARD', delayed_set)
  local signals = redis.call('ZCARD', signal_key)
  local existing, last_seq, stored_settings = unpack(redis.call('HMGET', jobs_hash, 's:' .. job_id, '#seq',
    '#settings'))
  if existing then
    return { 0, existing }
  end
  if last_seq and not safe_integer(last_seq, 0, 9999999999999) then
    return nil, redis.error_reply('BAD_JOBS the arrival counter #seq is ' .. shown(last_seq))
  end
  if not known_settings then
    local settings, bad = settings_of(stored_settings)
    if not settings then
      return nil, bad
    end
  end
  local rank = next_rank(jobs_hash, job_priority, job_lifo)
  local state = 'waiting'
  -- When the job is first ready (a: in `jobs`), for the age metrics.lua reports of the next
  -- job, metrics on or off: how long the head of a queue has waited is its first health sign.
  local time = redis.call('TIME')
  local ready = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) + job_delay
  if job_delay > 0 then
    state = 'delayed'
    redis.call('ZADD', delayed_set, string.format('%d', ready), job_id)
  else
    redis.call('ZADD', waiting_set, string.format('%d', rank), job_id)
    -- A member already there wakes the next worker that waits, as a new one would.
    if signals == 0 then
      wake_workers(signal_key)
    end
  end
  local fields = { 'd:' .. job_id, job_payload, 's:' .. job_id, state, 'r:' .. job_id,
    string.format('%d', rank), 'n:' .. job_id, '0', 'a:' .. job_id, string.format('%d', ready) }
  if job_group ~= '' then
    fields[#fields + 1], fields[#fields + 2] = 'g:' .. job_id, job_group
  end
  if job_retry then
    fields[#fields + 1], fields[#fields + 2] = 'o:' .. job_id, job_retry
  end
  if job_trace and job_trace ~= '' then
    fields[#fields + 1], fields[#fields + 2] = 'c:' .. job_id, job_trace
  end
  redis.call('HSET', jobs_hash, unpack(fields))
  return { 1, state }, nil, ready
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
-- A turn number in `turns_set` (a group's score) as these scripts write it: a whole number
-- from 1 to 10^15 - 1; nil and a BAD_TURNS error reply for one they do not write.
local function turn_number(turns_set, turn_group, turn_score)
  local n = safe_integer(turn_score, 1, 999999999999999)
  if not n then
    return nil, redis.error_reply('BAD_TURNS ' .. turns_set .. ' holds group ' .. shown(turn_group) .. ' at '
      .. shown(turn_score) .. ', not a turn number')
  end
  return n
end
-- The last turn handed out in `turns_set` (its highest score, 0 when it is empty); nil and
-- a BAD_TURNS error reply for a score these scripts do not write. Reads only.
local function last_turn(turns_set)
  local last = redis.call('ZRANGE', turns_set, '-1', '-1', 'WITHSCORES')
  if #last == 0 then
    return 0
  end
  return turn_number(turns_set, last[1], last[2])
end
-- What adding jobs of `job_group` ('' for none) needs when the queue's groups take turns,
-- read before any write: false when turns are off (settings_of of #settings in
-- `jobs_hash`), else the group's turn in `turns_set` (false when it has none) and the last
-- turn handed out; nil and an error reply for settings or a turn these scripts do not
-- write. Reads only.
local function turn_plan(jobs_hash, turns_set, job_group)
  local settings, bad = settings_of(redis.call('HGET', jobs_hash, '#settings'))
  if not settings then
    return nil, bad
  end
  if settings.group_turns == 0 then
    return false, nil, settings
  end
  local plan = { group = job_group, score = false }
  local score = redis.call('ZSCORE', turns_set, job_group)
  if score then
    plan.score, bad = turn_number(turns_set, job_group, score)
    if bad then
      return nil, bad
    end
  end
  plan.top, bad = last_turn(turns_set)
  if bad then
    return nil, bad
  end
  return plan, nil, settings
end
-- Job `job_id`, just added to `waiting_set` (add_job), waits for its group's turn instead:
-- it is parked at its rank in its group's range of `parked_set` (parked_member, group ''
-- for none), and its group, unless it has a turn, gets the next one in `turns_set` (as
-- turn_plan read them in `plan`, which this updates).
local function wait_turn(plan, waiting_set, parked_set, turns_set, jobs_hash, job_id)
  local rank = tonumber(redis.call('ZSCORE', waiting_set, job_id))
  redis.call('ZREM', waiting_set, job_id)
  redis.call('ZADD', parked_set, '0', parked_member(plan.group, rank, job_id))
  redis.call('HSET', jobs_hash, 's:' .. job_id, 'parked')
  if not plan.score then
    plan.top = plan.top + 1
    plan.score = plan.top
    redis.call('ZADD', turns_set, string.format('%d', plan.score), plan.group)
  end
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 8 or #ARGV < 4 or #ARGV > 105 then
  return redis.error_reply('BAD_ARGS expected 8 keys and from 4 to 105 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local delayed = KEYS[2]
local parked = KEYS[3]
local jobs = KEYS[4]
local signal = KEYS[5]
local schedules = KEYS[6]
local due = KEYS[7]
local turns = KEYS[8]
local schedule = ARGV[1]
if schedule == '' then
  return redis.error_reply('BAD_SCHEDULE must not be empty')
end
local run = ARGV[2] == '0' and 0 or tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not run or run > 1000000000000000 then
  return redis.error_reply('BAD_RUN must be an integer from 0 to 1000000000000000, got ' .. shown(ARGV[2]))
end
local rev = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not rev or rev > 1000000000000000 then
  return redis.error_reply('BAD_REV must be an integer from 1 to 1000000000000000, got ' .. shown(ARGV[3]))
end
local trace = ARGV[4]
if #trace < 0 or #trace > 1024 then
  return redis.error_reply('BAD_TRACE must be from 0 to 1024 bytes long, got ' .. #trace .. ' bytes')
end
for i = 5, #ARGV do
  local each = ARGV[i] == '0' and 0 or tonumber(string.match(ARGV[i], '^[1-9]%d*$'))
  if not each or each > 1000000000000000 then
    return redis.error_reply(
        'BAD_TIMES ARGV[' .. i .. '] must be an integer from 0 to 1000000000000000, got ' .. shown(ARGV[i]))
  end
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(waiting, '^(.+):waiting$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:waiting, got ' .. shown(waiting))
end
if delayed ~= tag_of_keys .. ':delayed' or parked ~= tag_of_keys .. ':parked' or jobs ~= tag_of_keys .. ':jobs' or
    signal ~= tag_of_keys .. ':signal' or schedules ~= tag_of_keys .. ':schedules' or due ~= tag_of_keys .. ':due' or
    turns ~= tag_of_keys .. ':turns' then
  for i, each in ipairs({ ':delayed', ':parked', ':jobs', ':signal', ':schedules', ':due', ':turns' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in waiting, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
local times = {}
for i = 5, #ARGV do
  times[#times + 1] = tonumber(ARGV[i])
end

-- O(1) reads: a key of another type fails with WRONGTYPE before anything is written,
-- whatever the reply.
for _, zset in ipairs({ waiting, delayed, signal, parked, turns }) do
  redis.call('ZCARD', zset)
end
redis.call('HLEN', jobs)
local config, bad = schedule_of(schedules, schedule)
if config == nil then
  return bad
end
-- Where the jobs wait for their group's turn, while groups take turns.
local turn, bad_turn, settings = turn_plan(jobs, turns, config and config.group or '')
if turn == nil then
  return bad_turn
end
local stored, bad_due = run_of(due, schedule, config)
if stored == false then
  return bad_due
end
if not config then
  return { 'already_fired', {}, 0, 0, 0 }
end
if stored ~= run or config.rev ~= rev then
  return { 'already_fired', {}, 0, 0, stored }
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if run > now then
  return { 'not_due', {}, 0, 0, run }
end

-- The run times due (up to now), the latest `catch_up` of them (at least one), and the
-- next run time.
local keep = math.max(config.catch_up, 1)
local fired = {}
local skipped, next_run
if config.every > 0 then
  if #times > 0 then
    return redis.error_reply('BAD_TIMES an every schedule computes its times: pass none, got ' .. #times)
  end
  local count = math.floor((now - run) / config.every) + 1
  local n = math.min(count, keep)
  for i = count - n, count - 1 do
    fired[#fired + 1] = run + i * config.every
  end
  skipped, next_run = count - n, run + count * config.every
else
  if #times == 0 then
    return redis.error_reply('BAD_TIMES a cron schedule needs its times after run from the caller')
  end
  local due_times = { run }
  for i, t in ipairs(times) do
    if t <= (times[i - 1] or run) then
      return redis.error_reply('BAD_TIMES times must each be after the one before (and after run), got ' .. t
        .. ' after ' .. (times[i - 1] or run))
    end
    if t <= now then
      due_times[#due_times + 1] = t
    elseif not next_run then
      next_run = t
    end
  end
  if not next_run then
    return { 'more_times', {}, 0, 0, run }
  end
  local n = math.min(#due_times, keep)
  for i = #due_times - n + 1, #due_times do
    fired[#fired + 1] = due_times[i]
  end
  skipped = #due_times - n
end

-- The jobs, as add.lua adds them; the first call reads and checks before its first write.
local added, there = {}, 0
for _, t in ipairs(fired) do
  local result, bad_jobs = add_job(waiting, delayed, jobs, signal, schedule .. ':' .. string.format('%d', t),
    config.payload, config.priority, 0, config.group, settings, config.retry, false, trace)
  if not result then
    return bad_jobs
  end
  if result[1] == 1 then
    if turn and result[2] == 'waiting' then
      wait_turn(turn, waiting, parked, turns, jobs, schedule .. ':' .. string.format('%d', t))
    end
    added[#added + 1] = t
  else
    there = there + 1
  end
end
redis.call('ZADD', due, next_run, schedule)
return { 'fired', added, there, skipped, next_run }
