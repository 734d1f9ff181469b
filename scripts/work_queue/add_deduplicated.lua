--- Adds a job unless one was added under the same deduplication id within its window.
---
--- Beyond the books: BullMQ's deduplication with a `ttl` (throttle), `extend` and
--- `replace` (debounce). The first call of a deduplication id `dedup` adds the job as
--- `add.lua` does and opens a window of `ttl`, kept in `window` (the job's id, expiring
--- with the window). A call within the window adds nothing: with `extend` the window starts
--- again from this call; with `replace` the payload of the window's job becomes this call's,
--- while that job waits (waiting, parked or delayed: a delayed one is then due `delay`
--- after this call, when `delay` is not 0), so the newest payload wins. The window ends
--- with its time, whatever became of its job; an id already in the queue is refused as
--- `add.lua` refuses it, and opens no window. Jobs whose id alone should deduplicate them
--- need no window: `add.lua` refuses an id while its job is in the queue. With events on,
--- a job added appends `added` with its state, and `delayed` with when it is due (ms,
--- server clock) when it is delayed or a replace moved its due time.
--- @key waiting zset {<name>}:waiting  job id -> rank: (255 - priority) × 10^13 + 5 × 10^12 ± arrival (- if LIFO)
--- @key delayed zset {<name>}:delayed  job id -> when it becomes waiting (ms, server clock)
--- @key parked zset {<name>}:parked    held-back jobs, all at score 0 (see take.lua)
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @key signal zset {<name>}:signal    one member while a job may be ready: workers wait on it with BZPOPMIN
--- @key events stream {<name>}:events  what happened to each job: event, job, and an error or progress
--- @key turns zset {<name>}:turns      group ('' for none) -> its turn, while groups take turns (see take.lua)
--- @key window string {<name>}:dedup:<dedup>  the window's job id, expiring with the window
--- @arg id string non-empty      the job's id, chosen by the caller: the same id is never queued twice
--- @arg payload bytes            the job's data
--- @arg priority uint 0..=255    higher is taken first; 0 is the usual
--- @arg delay ms 0..=10^12       how long the job waits before it can be taken; 0 for none
--- @arg group string             the group whose limits the job counts against; '' for none
--- @arg attempts uint 0..=1000    the most deliveries of this job; 0 for the caller's `max_deliveries`
--- @arg backoff string worker|none|fixed|exponential  the delay before each retry of this job; worker: the caller's
--- @arg backoff_delay ms 0..=10^12    the fixed delay, or the exponential backoff's first one
--- @arg backoff_max ms 0..=10^12      the exponential backoff's longest delay
--- @arg lifo bool                 ahead of the jobs waiting at its priority, not behind them
--- @arg remove_on_complete bool   dropped once completed, even while the queue keeps completed jobs
--- @arg remove_on_fail bool       dropped once dead, even while the queue keeps dead jobs
--- @arg dedup string non-empty    the deduplication id
--- @arg ttl ms 1..=10^15-1        how long the window lasts
--- @arg extend bool               a call within the window starts it again
--- @arg replace bool              a call within the window replaces the payload of its job while that job waits
--- @arg trace string len:0..=1024  the producer's W3C trace context, as add.lua's; '' for none
--- @return (string, string, string?)  'added', 'duplicate' (the id is in the queue), 'ignored', 'extended' or
---                               'replaced' (a window was open); the id of the job added or of the window's job;
---                               its state, nil when that job is gone
--- @error BAD_ARGS               not 8 keys and 17 arguments
--- @error BAD_ID                 empty
--- @error BAD_PRIORITY           not an integer within its range
--- @error BAD_DELAY              not whole milliseconds within its range
--- @error BAD_ATTEMPTS           not an integer within its range
--- @error BAD_BACKOFF            not one of its choices
--- @error BAD_BACKOFF_DELAY      not whole milliseconds within its range
--- @error BAD_BACKOFF_MAX        not whole milliseconds within its range
--- @error BAD_LIFO               not 1 or 0
--- @error BAD_REMOVE_ON_COMPLETE not 1 or 0
--- @error BAD_REMOVE_ON_FAIL     not 1 or 0
--- @error BAD_DEDUP              empty
--- @error BAD_TTL                not whole milliseconds within its range
--- @error BAD_EXTEND             not 1 or 0
--- @error BAD_REPLACE            not 1 or 0
--- @error BAD_TRACE              not from 0 to 1024 bytes long
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_JOBS               `jobs` holds an arrival counter (#seq) or settings these scripts do not write
--- @error BAD_TURNS              `turns` holds a score that is no turn number
--- @uses add_job turn_plan wait_turn emit retry_text
--- @default attempts 0          JobOptions::new: the caller's max_deliveries
--- @default backoff worker       JobOptions::new: the caller's delay
--- @default backoff_delay 0      JobOptions::new: none
--- @default backoff_max 0        JobOptions::new: none
--- @default lifo 0               JobOptions::new: behind the jobs of its priority
--- @default remove_on_complete 0 JobOptions::new: kept as the queue keeps completed jobs
--- @default remove_on_fail 0     JobOptions::new: kept as the queue keeps dead jobs
--- @default extend 0             Deduplication::new: the window is not extended
--- @default replace 0            Deduplication::new: the payload is not replaced
--- @default trace ''             JobOptions::new: none (with the `otel` feature, the add's own span)
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
if #KEYS ~= 8 or #ARGV ~= 17 then
  return redis.error_reply('BAD_ARGS expected 8 keys and 17 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local delayed = KEYS[2]
local parked = KEYS[3]
local jobs = KEYS[4]
local signal = KEYS[5]
local events = KEYS[6]
local turns = KEYS[7]
local window = KEYS[8]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID must not be empty')
end
local payload = ARGV[2]
local priority = ARGV[3] == '0' and 0 or tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not priority or priority > 255 then
  return redis.error_reply('BAD_PRIORITY must be an integer from 0 to 255, got ' .. shown(ARGV[3]))
end
local delay = ARGV[4] == '0' and 0 or tonumber(string.match(ARGV[4], '^[1-9]%d*$'))
if not delay or delay > 1000000000000 then
  return redis.error_reply('BAD_DELAY must be whole milliseconds from 0 to 1000000000000, got ' .. shown(ARGV[4]))
end
local group = ARGV[5]
local attempts = ARGV[6] == '0' and 0 or tonumber(string.match(ARGV[6], '^[1-9]%d*$'))
if not attempts or attempts > 1000 then
  return redis.error_reply('BAD_ATTEMPTS must be an integer from 0 to 1000, got ' .. shown(ARGV[6]))
end
local backoff = ARGV[7]
if backoff ~= 'worker' and backoff ~= 'none' and backoff ~= 'fixed' and backoff ~= 'exponential' then
  return redis.error_reply('BAD_BACKOFF must be one of worker, none, fixed, exponential, got ' .. shown(backoff))
end
local backoff_delay = ARGV[8] == '0' and 0 or tonumber(string.match(ARGV[8], '^[1-9]%d*$'))
if not backoff_delay or backoff_delay > 1000000000000 then
  return redis.error_reply(
      'BAD_BACKOFF_DELAY must be whole milliseconds from 0 to 1000000000000, got ' .. shown(ARGV[8]))
end
local backoff_max = ARGV[9] == '0' and 0 or tonumber(string.match(ARGV[9], '^[1-9]%d*$'))
if not backoff_max or backoff_max > 1000000000000 then
  return redis.error_reply('BAD_BACKOFF_MAX must be whole milliseconds from 0 to 1000000000000, got ' .. shown(ARGV[9]))
end
local lifo = ARGV[10] == '1'
if not lifo and ARGV[10] ~= '0' then
  return redis.error_reply('BAD_LIFO must be 1 or 0, got ' .. shown(ARGV[10]))
end
local remove_on_complete = ARGV[11] == '1'
if not remove_on_complete and ARGV[11] ~= '0' then
  return redis.error_reply('BAD_REMOVE_ON_COMPLETE must be 1 or 0, got ' .. shown(ARGV[11]))
end
local remove_on_fail = ARGV[12] == '1'
if not remove_on_fail and ARGV[12] ~= '0' then
  return redis.error_reply('BAD_REMOVE_ON_FAIL must be 1 or 0, got ' .. shown(ARGV[12]))
end
local dedup = ARGV[13]
if dedup == '' then
  return redis.error_reply('BAD_DEDUP must not be empty')
end
local ttl = tonumber(string.match(ARGV[14], '^[1-9]%d*$'))
if not ttl or ttl > 999999999999999 then
  return redis.error_reply('BAD_TTL must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[14]))
end
local extend = ARGV[15] == '1'
if not extend and ARGV[15] ~= '0' then
  return redis.error_reply('BAD_EXTEND must be 1 or 0, got ' .. shown(ARGV[15]))
end
local replace = ARGV[16] == '1'
if not replace and ARGV[16] ~= '0' then
  return redis.error_reply('BAD_REPLACE must be 1 or 0, got ' .. shown(ARGV[16]))
end
local trace = ARGV[17]
if #trace < 0 or #trace > 1024 then
  return redis.error_reply('BAD_TRACE must be from 0 to 1024 bytes long, got ' .. #trace .. ' bytes')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(waiting, '^(.+):waiting$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:waiting, got ' .. shown(waiting))
end
if delayed ~= tag_of_keys .. ':delayed' or parked ~= tag_of_keys .. ':parked' or jobs ~= tag_of_keys .. ':jobs' or
    signal ~= tag_of_keys .. ':signal' or events ~= tag_of_keys .. ':events' or turns ~= tag_of_keys .. ':turns' then
  for i, each in ipairs({ ':delayed', ':parked', ':jobs', ':signal', ':events', ':turns' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in waiting, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
if window ~= tag_of_keys .. ':dedup:' .. dedup then
  return redis.error_reply(
      'BAD_KEYS KEYS[8] must be {<name>}:dedup:<dedup> with <name> as in waiting and <dedup> = ARGV[13], got ' ..
      shown(window))
end
-- End of the generated input checks.
-- Read before the first write: the keys' types, where the job waits for its turn, and the
-- window.
if redis.call('EXISTS', parked, turns, events) > 0 then
  redis.call('ZCARD', parked)
  redis.call('ZCARD', turns)
  redis.call('XLEN', events)
end
local turn, bad_turn, settings = turn_plan(jobs, turns, group)
if turn == nil then
  return bad_turn
end
local holder = redis.call('GET', window)
if holder then
  local state = redis.call('HGET', jobs, 's:' .. holder)
  local outcome = extend and 'extended' or 'ignored'
  if replace and (state == 'waiting' or state == 'parked' or state == 'delayed') then
    outcome = 'replaced'
    redis.call('HSET', jobs, 'd:' .. holder, payload)
    if trace ~= '' then
      redis.call('HSET', jobs, 'c:' .. holder, trace)
    else
      redis.call('HDEL', jobs, 'c:' .. holder)
    end
    if state == 'delayed' and delay > 0 then
      local time = redis.call('TIME')
      local due = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) + delay
      redis.call('ZADD', delayed, 'XX', string.format('%d', due), holder)
      emit(events, settings.events_max, 'delayed', holder, 'due', string.format('%d', due))
    end
  end
  if extend then
    redis.call('PEXPIRE', window, string.format('%d', ttl))
  end
  return { outcome, holder, state or false }
end
local retry = retry_text(attempts, backoff, backoff_delay, backoff_max, remove_on_complete, remove_on_fail)
local added, bad, due = add_job(waiting, delayed, jobs, signal, id, payload, priority, delay, group, settings,
  retry, lifo, trace)
if not added then
  return bad
end
if added[1] == 0 then
  return { 'duplicate', id, added[2] }
end
if turn and added[2] == 'waiting' then
  wait_turn(turn, waiting, parked, turns, jobs, id)
  added[2] = 'parked'
end
redis.call('SET', window, id, 'PX', string.format('%d', ttl))
emit(events, settings.events_max, 'added', id, 'state', added[2])
if added[2] == 'delayed' then
  emit(events, settings.events_max, 'delayed', id, 'due', string.format('%d', due))
end
return { 'added', id, added[2] }
