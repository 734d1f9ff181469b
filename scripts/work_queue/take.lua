--- Takes up to `limit` jobs, each under a lease of `lease`, in priority then arrival order.
---
--- Beyond the books: the heart of a reliable work queue. A queue is the keys below,
--- in one hash slot (the Rust `WorkQueue` derives them as `{name}:waiting`, …); every
--- `work_queue` script takes the ones it uses, in this order. Before taking, one call
--- does three bounded chores, on the server's clock: it hands back up to `limit` jobs
--- whose lease ran out (to `waiting`, or to `dead` once they were delivered
--- `max_deliveries` times, or their own attempts: see `add.lua`), moves up to `limit`
--- due delayed jobs to `waiting`, and
--- unparks up to `limit` jobs of groups whose rate window has passed. Then it examines at
--- most 4 × `limit` waiting jobs: a job whose group already runs its concurrency in jobs,
--- or started its rate in jobs in the last period, or was rate-limited by a handler
--- (`rate_limit_group.lua`), is parked (out of the way of other groups' jobs) until a job
--- of its group ends or the window passes; every other job is taken, while the queue
--- holds fewer jobs than its concurrency and started fewer than its rate in its period.
--- The limits are the queue's own, set by an operator with `configure.lua` and kept in
--- `jobs` (#settings), so every worker applies the same ones. Last, it drops the start
--- times of groups idle for a whole period, and up to `limit` dead jobs beyond the
--- dead-letter cap (by count and by age, also set with `configure.lua`: 10,000 jobs and
--- 180 days unless set). A group's rate ring, in `groups`: p:<g> its starts, z:<g> its
--- size (the group rate), s:<g>:<i> the start times, o:<g> where old start times end,
--- u:<g> until when a handler rate-limited it. A change of the group rate starts the ring
--- anew when the group's next job is examined; the old start times, and those of idle
--- groups, are dropped at most 400 per call, and later calls drop the rest. The queue's
--- own ring is #qn (its starts) and #qs:<i> in `jobs`. The call counts the jobs it acks
--- and the leases that ran out in the queue's metrics (see `metrics.lua`), and in its
--- events when they are on: `completed` (and, for a flow's parent that may run now,
--- `waiting`), `stalled` or `dead` with the error `lease ran out`, `waiting` for each
--- delayed job come due, and `active` with its delivery for each job taken. A `done`
--- job's result is kept as `ack.lua` keeps one (an empty one too, with events on), and
--- the call drops up to `limit` kept results whose time has passed. While the queue keeps
--- completed jobs (`configure.lua`), a `done` job goes to `completed` as `ack.lua` sends one
--- there, each job taken notes when it started (b: in its record), and the call drops up
--- to `limit` of the oldest completed jobs beyond the queue's count or age (or all of
--- them, `limit` per call, once it keeps none). A lease that runs out on the last delivery
--- of a job added with `remove_on_fail` drops the job instead of sending it to `dead`.
---
--- A non-Rust worker takes a job with this script, keeps the token, calls `extend.lua`
--- before the lease runs out, and ends with `ack.lua` (done) or `nack.lua` (failed), or
--- acks it in its next `take` (`done`: one call per job, or per batch, on a busy queue).
--- A worker that dies simply stops renewing: its job is handed out again after the lease.
--- A lease token is `token` (128 random bits the caller draws anew for every call) and the
--- delivery count, `<token>:<n>`: nothing the server remembers, so a replica promoted
--- after it missed some deliveries never hands out a token again. With nothing to take,
--- a worker waits on `signal` (`BZPOPMIN signal <seconds>`), which every script that makes
--- a job ready fills; this one fills it again while jobs are left, to wake the next
--- worker, and a wait's timeout finds the jobs whose delay ran out.
--- A taken job's delivery count is 1 on its first delivery, its deadline is in ms of the
--- server's clock, and its group is nil when it has none.
--- While the queue is paused (`pause.lua` set `#paused` in `jobs`), the call acks `done`
--- and does its chores but takes no job and leaves `signal` alone.
--- The whole call is read and checked before its first write: a rank, count, start time,
--- parked job or record that another client wrote, or an ack of `done` that fails, is
--- refused with nothing written, so no job is lost or left half moved.
---
--- Groups that take turns (`configure.lua`'s `group_turns`, off unless set): jobs are then
--- taken round-robin between the groups with jobs ready, so one group's backlog does not
--- hold back the others' jobs. Jobs without a group are one group of their own (group '').
--- A job ready for its turn is parked in its group's range of `parked` (state 'parked'),
--- in rank order (so priority orders the jobs of one group), and each such group has a
--- turn number in `turns`. After the chores the call moves up to 2 × `limit` jobs that are
--- in `waiting` (back from a lease, a delay, a group limit, a retry) into their groups'
--- ranges, giving a group without a turn the next one; then it takes from the group with
--- the lowest turn its first job, which sends the group behind every other group (the next
--- turn number) while it has jobs left, and so on: at most `limit` jobs, at most 2 ×
--- `limit` turns examined, and groups whose turn is beyond the first 2 × `limit` wait for a
--- later call. Priority does not jump between groups: a turn is a turn. A group at a limit
--- loses its turn (its jobs stay parked) and gets one again when a job of it comes back to
--- `waiting` (a job of it ends, its window passes). With turns off, the call hands back
--- the jobs of up to `limit` groups that still have a turn (up to `limit` jobs) to
--- `waiting`, so switching turns off loses nothing. Turn numbers grow by one from the
--- highest in `turns` (below 10^15).
--- @key waiting zset {<name>}:waiting  job id -> rank: (255 - priority) × 10^13 + 5 × 10^12 ± arrival (- if LIFO)
--- @key delayed zset {<name>}:delayed  job id -> when it becomes waiting (ms, server clock)
--- @key leased zset {<name>}:leased    job id -> lease deadline (ms, server clock)
--- @key dead zset {<name>}:dead        job id -> when it died (ms, server clock): the dead-letter queue
--- @key parked zset {<name>}:parked    held-back jobs of groups at their limit, all at score 0 (see parked_prefix)
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @key groups hash {<name>}:groups  per group g: r:<g> running; p:<g>, z:<g>, s:<g>:<i>, o:<g>: its rate ring
--- @key wake zset {<name>}:wake        group -> when its rate window lets a parked job start (ms)
--- @key idle zset {<name>}:idle        group -> when its ring of start times stops mattering (ms), to drop it
--- @key signal zset {<name>}:signal    one member while a job may be ready: workers wait on it with BZPOPMIN
--- @key events stream {<name>}:events  what happened to each job: event, job, and an error or progress
--- @key results hash {<name>}:results  job id -> its result, while it is kept
--- @key kept zset {<name>}:kept        job id -> until when its result is kept (ms, server clock)
--- @key turns zset {<name>}:turns      group ('' for none) -> its turn, while groups take turns (see above)
--- @key completed zset {<name>}:completed  job id -> when it completed (ms, server clock), while kept
--- @key blocked zset {<name>}:blocked  flow parent id -> when it was added (ms, server clock), while blocked
--- @arg lease ms 1..=10^15-1    how long each job is held before it is handed out again
--- @arg limit uint 1..=10        the most jobs taken, and the bound on each chore (4 × `limit` examined)
--- @arg max_deliveries uint 1..=1000    a job whose lease runs out after this many deliveries goes to `dead`
--- @arg token string hex:32      128 random bits as 32 hex digits, drawn anew for every call
--- @arg done bytes... 0..=30    id, token, result, …: jobs this worker finished, acked first as `ack.lua` acks one
--- @return [(string, string, uint, uint, string?, bytes, string?)] per job: id, token, delivery, deadline ms, group,
---                               payload, and the trace context its producer stored (see add.lua)
--- @error BAD_ARGS               not 16 keys and from 4 to 34 arguments
--- @error BAD_LEASE              not whole milliseconds within its range
--- @error BAD_LIMIT              not an integer within its range
--- @error BAD_MAX_DELIVERIES     not an integer within its range
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_TOKEN              not 32 hex digits
--- @error BAD_DONE               `done` is not id, token, result triples, or an id or token is empty
--- @error RESULT_TOO_BIG         a result of `done` is longer than the queue's `result_max`; nothing was written
--- @error LEASE_LOST             a job of `done` is not held under its token, or is there twice; nothing was written
--- @error BAD_JOBS               `jobs` holds a rank, count, setting or metric these scripts do not write (see above)
--- @error BAD_GROUPS             `groups` holds a running count or time that is no count (see above)
--- @error BAD_PARKED             `parked` holds a member this script did not write (see above)
--- @error BAD_WAITING            `waiting` holds a job to park at a score that is no rank (see above)
--- @error BAD_TURNS              `turns` holds a score that is no turn number
--- @uses running_of parked_of unpark release_slot held_group forget_job wake_workers
--- @uses settings_of metrics_at count_ends trim_ended drop_record parked_member emit drop_results keep_result
--- @uses parent_of child_ended result_too_big retry_of deliveries_allowed complete_job
--- @uses turn_number last_turn safe_integer shown parked_prefix
--- @default lease 30000          WorkQueue::new: a 30 s lease
--- @default max_deliveries 5     WorkQueue::new: 5 deliveries
--- @clock server
--- @complexity O(M × log N + D), N = the jobs, M = `limit`, D = the start times dropped, at most 400
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
-- Up to n parked jobs of `group` in `parked_set`, first first, each as { member, id, rank };
-- nil and an error reply for a member that take.lua did not write. Reads only.
local function parked_of(parked_set, group, n)
  local prefix = parked_prefix(group)
  local members = redis.call('ZRANGE', parked_set, '[' .. prefix, '(' .. prefix .. ':', 'BYLEX', 'LIMIT', '0',
    string.format('%d', n))
  local found = {}
  for i, member in ipairs(members) do
    local rank = string.match(string.sub(member, #prefix + 1, #prefix + 16), '^' .. string.rep('%d', 16) .. '$')
    rank = rank and tonumber(rank)
    -- A rank as take.lua writes it (from 1 to 2559999999999999), then a job id.
    if not (rank and rank >= 1 and rank <= 2559999999999999 and #member > #prefix + 16) then
      return nil, redis.error_reply('BAD_PARKED parked holds ' .. shown(member) .. ', not a parked job')
    end
    found[i] = { member = member, id = string.sub(member, #prefix + 17), rank = rank }
  end
  return found
end
-- Moves parked jobs (as parked_of read them) back to waiting, at their ranks; how many.
local function unpark(parked_set, waiting_set, jobs_hash, found)
  for _, job in ipairs(found) do
    redis.call('ZREM', parked_set, job.member)
    redis.call('ZADD', waiting_set, string.format('%d', job.rank), job.id)
    redis.call('HSET', jobs_hash, 's:' .. job.id, 'waiting')
  end
  return #found
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
-- A job of `group` no longer runs: one fewer running, and `first` (as slot_of read it)
-- goes back to waiting; how many went back.
local function release_slot(groups_hash, parked_set, waiting_set, jobs_hash, group, first)
  if redis.call('HINCRBY', groups_hash, 'r:' .. group, '-1') <= 0 then
    redis.call('HDEL', groups_hash, 'r:' .. group)
  end
  return unpark(parked_set, waiting_set, jobs_hash, first)
end
-- Tells workers blocked on `signal_key` (BZPOPMIN) that a job may be ready: the key holds
-- at most one member, so it stays one member however many jobs wait.
local function wake_workers(signal_key)
  redis.call('ZADD', signal_key, '0', 'ready')
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
-- Every field of job `job_id` in the jobs hash goes (add.lua and take.lua name them).
local function drop_record(jobs_hash, job_id)
  redis.call('HDEL', jobs_hash, 'd:' .. job_id, 's:' .. job_id, 'r:' .. job_id, 'n:' .. job_id,
    'g:' .. job_id, 't:' .. job_id, 'e:' .. job_id, 'a:' .. job_id, 'p:' .. job_id, 'P:' .. job_id,
    'w:' .. job_id, 'x:' .. job_id, 'o:' .. job_id, 'l:' .. job_id, 'b:' .. job_id, 'v:' .. job_id,
    'c:' .. job_id)
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
-- Job `job_id`'s own options, `stored` as retry_parts reads them: false for none; nil
-- and a BAD_JOBS error reply for a value add.lua does not write. Reads nothing.
local function retry_of(job_id, stored)
  if not stored then
    return false
  end
  local retry = retry_parts(stored)
  if not retry then
    return nil, redis.error_reply('BAD_JOBS job ' .. shown(job_id) .. ' has the options ' .. shown(stored)
      .. ', not what add.lua writes')
  end
  return retry
end
-- The most deliveries of a job with retry options `retry` (retry_of) when the caller says
-- `max_deliveries`: the job's own attempts, unless it has none.
local function deliveries_allowed(retry, max_deliveries)
  if retry and retry.attempts > 0 then
    return retry.attempts
  end
  return max_deliveries
end
-- A held job that ended well: out of `leased_set` and the jobs hash (its group's slot is
-- the caller's to release).
local function forget_job(leased_set, jobs_hash, job_id)
  redis.call('ZREM', leased_set, job_id)
  drop_record(jobs_hash, job_id)
end
-- A held job that ended well at `at`, in a queue that keeps completed jobs: out of
-- `leased_set`, and into `completed_set` (scored by `at`) with its record (state
-- completed, v: its `result` unless empty, and an empty token, which no caller's token
-- matches: one write instead of two), unless its own
-- options (`options`, retry_of's) drop it at once. Whether it was kept; the caller trims
-- the set.
local function complete_job(leased_set, completed_set, jobs_hash, job_id, at, result, options)
  if options and options.drop_completed then
    forget_job(leased_set, jobs_hash, job_id)
    return false
  end
  redis.call('ZREM', leased_set, job_id)
  redis.call('ZADD', completed_set, string.format('%d', at), job_id)
  if result ~= '' then
    redis.call('HSET', jobs_hash, 's:' .. job_id, 'completed', 't:' .. job_id, '', 'v:' .. job_id, result)
  else
    redis.call('HSET', jobs_hash, 's:' .. job_id, 'completed', 't:' .. job_id, '')
  end
  return true
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
-- The completed and failed counts of the metrics slot `field` (its stored text `slot`, or
-- false) for `minute`: zeros when it holds another minute's (or none); nil and a
-- BAD_JOBS error reply for text these scripts do not write.
local function slot_counts(field, slot, minute)
  if not slot then
    return { 0, 0 }
  end
  local at_minute, c, f = string.match(slot, '^(%d+) (%d+) (%d+)$')
  c = c and safe_integer(c, 0, 999999999999999)
  f = f and safe_integer(f, 0, 999999999999999)
  if not (at_minute and safe_integer(at_minute, 0, 999999999999999) and c and f) then
    return nil, redis.error_reply('BAD_JOBS the metrics ' .. field .. ' are ' .. shown(slot)
      .. ', not what these scripts write')
  end
  if tonumber(at_minute) ~= minute then
    return { 0, 0 }
  end
  return { c, f }
end
-- The metrics that jobs ending at `at` (ms, server clock) add to, read before any write:
-- the all-time totals (#totals: completed, failed deliveries, dead) and the slot of that
-- minute in a ring of `window` minutes (#m:<slot>: minute, completed, failed), both in the
-- jobs hash; false when `window` is 0 (metrics off); nil and a BAD_JOBS error reply for a
-- value these scripts do not write.
local function metrics_at(jobs_hash, at, window)
  if window == 0 then
    return false
  end
  local minute = math.floor(at / 60000)
  local field = '#m:' .. (minute % window)
  local totals, slot = unpack(redis.call('HMGET', jobs_hash, '#totals', field))
  local m = { field = field, minute = minute, totals = { 0, 0, 0 }, slot = { 0, 0 } }
  if totals then
    local c, f, d = string.match(totals, '^(%d+) (%d+) (%d+)$')
    m.totals = { c and safe_integer(c, 0, 999999999999999), f and safe_integer(f, 0, 999999999999999),
      d and safe_integer(d, 0, 999999999999999) }
    if not (m.totals[1] and m.totals[2] and m.totals[3]) then
      return nil, redis.error_reply('BAD_JOBS the totals #totals are ' .. shown(totals)
        .. ', not what these scripts write')
    end
  end
  local counts, bad = slot_counts(field, slot, minute)
  if not counts then
    return nil, bad
  end
  m.slot = counts
  return m
end
-- Adds jobs that ended to the metrics `m` (as metrics_at read them): `completed` acked,
-- `failed` deliveries that failed (a nack, or a lease that ran out), `died` of them dead.
local function count_ends(jobs_hash, m, completed, failed, died)
  if not m or completed + failed == 0 then
    return
  end
  redis.call('HSET', jobs_hash,
    '#totals', string.format('%d %d %d', m.totals[1] + completed, m.totals[2] + failed, m.totals[3] + died),
    m.field, string.format('%d %d %d', m.minute, m.slot[1] + completed, m.slot[2] + failed))
end
-- Drops up to `budget` jobs of `ended_set` (dead or completed, scored by when they
-- ended), oldest first: those beyond the newest `max_count`, then those ended longer than
-- `max_age` ms before `at`; how many went. `card`, when the caller knows it, is how many
-- the set holds (else it is read).
local function trim_ended(ended_set, jobs_hash, at, max_count, max_age, budget, card)
  local cutoff = at - max_age
  local over = math.min((card or redis.call('ZCARD', ended_set)) - max_count, budget)
  local gone = {}
  -- Whether the oldest left may be past the age: not when a job popped (older than any
  -- left) is not.
  local aged_left = true
  if over > 0 then
    local popped = redis.call('ZPOPMIN', ended_set, string.format('%d', over))
    for i = 1, #popped, 2 do
      gone[#gone + 1] = popped[i]
    end
    aged_left = tonumber(popped[#popped]) <= cutoff
  end
  if aged_left and #gone < budget then
    local aged = redis.call('ZRANGE', ended_set, '-inf', string.format('%d', cutoff), 'BYSCORE', 'LIMIT', '0',
      string.format('%d', budget - #gone))
    if #aged > 0 then
      redis.call('ZREM', ended_set, unpack(aged))
      for _, job_id in ipairs(aged) do
        gone[#gone + 1] = job_id
      end
    end
  end
  for _, job_id in ipairs(gone) do
    drop_record(jobs_hash, job_id)
  end
  return #gone
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
-- Drops up to `budget` kept results whose time has passed at `at` (ms, server clock).
local function drop_results(results_hash, kept_set, at, budget)
  local gone = redis.call('ZRANGE', kept_set, '-inf', string.format('%d', at), 'BYSCORE', 'LIMIT', '0',
    string.format('%d', budget))
  if #gone > 0 then
    redis.call('ZREM', kept_set, unpack(gone))
    redis.call('HDEL', results_hash, unpack(gone))
  end
end
-- An error reply when `value`, the result of job `job_id`, is longer than the `most`
-- bytes the queue keeps (its `result_max`); nil when it fits. Checked before any write.
local function result_too_big(job_id, value, most)
  if #value > most then
    return redis.error_reply('RESULT_TOO_BIG the result of job ' .. shown(job_id) .. ' is ' .. #value
      .. ' bytes, more than the ' .. most .. ' the queue keeps')
  end
end
-- Keeps `value`, the result of job `job_id`, until `at` + `ttl` (ms, server clock): the
-- value in `results_hash`, its expiry in `kept_set`; then drops up to two results whose
-- time has passed, so the results kept shrink as fast as they grow. The caller checked
-- both keys' types before its first write.
local function keep_result(results_hash, kept_set, job_id, value, at, ttl)
  redis.call('HSET', results_hash, job_id, value)
  redis.call('ZADD', kept_set, string.format('%d', at + ttl), job_id)
  drop_results(results_hash, kept_set, at, 2)
end
-- The parent that a flow's child names in `link` (its P: field as the caller read it:
-- the policy f, i or c, then the parent's id; see add_flow.lua), checked before any
-- write (`blocked_set`'s type too, which child_ended writes): { id, policy }, or false
-- when `link` is false; nil and a BAD_JOBS error reply for a link, or a waiting parent's
-- count or rank, that add_flow.lua did not write.
local function parent_of(jobs_hash, blocked_set, link)
  if not link then
    return false
  end
  redis.call('ZCARD', blocked_set)
  local policy, parent = string.match(link, '^([fic])(.+)$')
  if not policy then
    return nil, redis.error_reply('BAD_JOBS a child names its parent as ' .. shown(link)
      .. ', not as add_flow.lua writes it')
  end
  local state, pending, rank = unpack(redis.call('HMGET', jobs_hash, 's:' .. parent, 'w:' .. parent, 'r:' .. parent))
  if state == 'blocked' and not (pending and safe_integer(pending, 1, 100)
      and rank and safe_integer(rank, 1, 2559999999999999)) then
    return nil, redis.error_reply('BAD_JOBS parent ' .. shown(parent) .. ' waits for ' .. shown(pending or '')
      .. ' children at the rank ' .. shown(rank or '') .. ', not what add_flow.lua writes')
  end
  return { id = parent, policy = policy }
end
-- A child of a flow ended, `completed` or dead (at `at`, ms): its parent (as parent_of
-- read it; nothing when false, or when the parent no longer waits) waits for one child
-- fewer, and leaves `blocked_set` for `waiting_set` at its rank once none is left; a
-- dead child lists itself in the parent's x: field under the policy c, and takes the
-- parent to `dead_set` with it under the policy f. Answers 'waiting' or 'dead' when the
-- parent moved (the caller wakes workers, or reports the death), false otherwise.
local function child_ended(jobs_hash, waiting_set, dead_set, blocked_set, parent, child_id, completed, at)
  if not parent then
    return false
  end
  local p = parent.id
  local state, pending, rank, failed = unpack(redis.call('HMGET', jobs_hash, 's:' .. p, 'w:' .. p, 'r:' .. p,
    'x:' .. p))
  if state ~= 'blocked' then
    return false
  end
  if not completed and parent.policy == 'f' then
    redis.call('ZREM', blocked_set, p)
    redis.call('ZADD', dead_set, string.format('%d', at), p)
    redis.call('HSET', jobs_hash, 's:' .. p, 'dead', 'e:' .. p, 'child ' .. child_id .. ' failed')
    redis.call('HDEL', jobs_hash, 'w:' .. p)
    return 'dead'
  end
  if not completed and parent.policy == 'c' then
    redis.call('HSET', jobs_hash, 'x:' .. p, (failed or '') .. #child_id .. ':' .. child_id)
  end
  pending = tonumber(pending) - 1
  if pending > 0 then
    redis.call('HSET', jobs_hash, 'w:' .. p, string.format('%d', pending))
    return false
  end
  redis.call('HDEL', jobs_hash, 'w:' .. p)
  redis.call('ZREM', blocked_set, p)
  redis.call('ZADD', waiting_set, rank, p)
  redis.call('HSET', jobs_hash, 's:' .. p, 'waiting')
  return 'waiting'
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 16 or #ARGV < 4 or #ARGV > 34 then
  return redis.error_reply('BAD_ARGS expected 16 keys and from 4 to 34 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
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
local lease = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not lease or lease > 999999999999999 then
  return redis.error_reply('BAD_LEASE must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[1]))
end
local limit = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not limit or limit > 10 then
  return redis.error_reply('BAD_LIMIT must be an integer from 1 to 10, got ' .. shown(ARGV[2]))
end
local max_deliveries = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not max_deliveries or max_deliveries > 1000 then
  return redis.error_reply('BAD_MAX_DELIVERIES must be an integer from 1 to 1000, got ' .. shown(ARGV[3]))
end
local token = ARGV[4]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
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
-- O(1) reads that fail with WRONGTYPE before anything is written; an empty set's chore
-- is skipped. The other keys are read before the first write whatever they hold, which
-- checks their types too: waiting, delayed and leased (ZRANGE), jobs (HMGET).
local cards = { [signal] = redis.call('ZCARD', signal) }
-- Paused (pause.lua): nothing is taken and no worker is woken.
-- With the queue's start count (#qn, read below only while the queue has a rate).
local paused, stored_settings, queue_started = unpack(redis.call('HMGET', jobs, '#paused', '#settings', '#qn'))
if paused and paused ~= '1' then
  return redis.error_reply('BAD_JOBS the pause flag #paused is ' .. shown(paused) .. ', not 1')
end
local take_limit = paused and 0 or limit

-- The queue's limits, caps and metrics window (configure.lua).
local settings, bad_settings = settings_of(stored_settings)
if not settings then
  return bad_settings
end
-- Completed jobs kept (configure.lua's completed_max): the acked jobs go to `completed`.
local keep = settings.completed_max > 0
-- The keys that only jobs of groups fill, and those of dead jobs, events, results, turns
-- and completed jobs no longer kept, which a healthy queue that does not use them never
-- creates: one call each while none is there.
cards[completed] = keep and redis.call('ZCARD', completed) or 0
cards[parked], cards[wake], cards[idle] = 0, 0, 0
local groups_used = redis.call('EXISTS', groups, parked, wake, idle) > 0
if groups_used then
  redis.call('HLEN', groups)
  cards[parked] = redis.call('ZCARD', parked)
  cards[wake] = redis.call('ZCARD', wake)
  cards[idle] = redis.call('ZCARD', idle)
end
cards[dead], cards[kept], cards[turns] = 0, 0, 0
local extras_used = (keep and redis.call('EXISTS', dead, events, results, kept, turns)
  or redis.call('EXISTS', dead, events, results, kept, turns, completed)) > 0
if extras_used then
  cards[dead] = redis.call('ZCARD', dead)
  cards[kept] = redis.call('ZCARD', kept)
  cards[turns] = redis.call('ZCARD', turns)
  cards[completed] = redis.call('ZCARD', completed)
  redis.call('HLEN', results)
  redis.call('XLEN', events)
end

local group_concurrency = settings.group_concurrency
local group_rate = settings.group_rate
local group_period = settings.group_period
local queue_rate = settings.queue_rate

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
-- Numbers go to redis.call as text (see work_queue/_shared.lua).
local now_text, limit_text = string.format('%d', now), string.format('%d', limit)
-- The first `limit` members of sorted set `zset` due at `now` (score at most `now`).
local function due_in(zset)
  return redis.call('ZRANGE', zset, '-inf', now_text, 'BYSCORE', 'LIMIT', '0', limit_text)
end
local metrics, bad_metrics = metrics_at(jobs, now, settings.metrics_minutes)
if metrics == nil then
  return bad_metrics
end

-- The common call has a path of its own: on a queue that is not paused and uses none of
-- groups, turns, limits, events, kept results, flows or dead jobs, with no lease run out
-- and no delayed job due, its acks (without results) and takes are the reads and writes
-- that the general path below makes for them, in one pass without the plan's tables and
-- closures (a third of the general path's time). Anything else, an error too, falls
-- through to the general path, which reuses the lists of due leases and jobs read here.
-- Leases waiting job `id` on its `delivery` (a count it read and checked, plus one): held
-- under this call's token until its deadline. Answers the token and the deadline.
local function lease_job(id, delivery)
  local count = string.format('%d', delivery)
  local held = token .. ':' .. count
  local deadline = now + lease
  redis.call('ZADD', leased, string.format('%d', deadline), id)
  if keep then
    -- When it started, for its history.
    redis.call('HSET', jobs, 's:' .. id, 'leased', 't:' .. id, held, 'n:' .. id, count, 'b:' .. id, now_text)
  else
    redis.call('HSET', jobs, 's:' .. id, 'leased', 't:' .. id, held, 'n:' .. id, count)
  end
  return held, deadline
end
-- Ends acked job `id` (`options` its own, as retry_of reads them): kept in `completed`
-- with `result` while the queue keeps completed jobs (counted in cards), else dropped.
local function end_acked(id, result, options)
  if keep then
    if complete_job(leased, completed, jobs, id, now, result, options) then
      cards[completed] = cards[completed] + 1
    end
  else
    forget_job(leased, jobs, id)
  end
end
local lean_lapsed, lean_due
if not paused and not groups_used and not extras_used and group_concurrency == 0 and group_rate == 0
    and settings.queue_concurrency == 0 and queue_rate == 0 and settings.events_max == 0
    and settings.group_turns == 0 and #ARGV % 3 == 1 then
  -- The acked jobs in order, each also a key to its own options (as retry_of reads them;
  -- false when the queue keeps no completed jobs).
  local lean, acked, acked_options = true, {}, {}
  for i = 5, #ARGV, 3 do
    local id, job_token = ARGV[i], ARGV[i + 1]
    if id == '' or job_token == '' or acked[id] or ARGV[i + 2] ~= '' then
      lean = false
      break
    end
    local group, bad, _, link, stored_options = held_group(jobs, id, job_token)
    local options = keep and not (bad or group or link) and retry_of(id, stored_options)
    if options == nil or bad or group or link then
      lean = false
      break
    end
    acked[id] = true
    acked_options[id] = options
    acked[#acked + 1] = id
  end
  if lean then
    lean_lapsed = due_in(leased)
    lean = #lean_lapsed == 0
  end
  if lean then
    lean_due = due_in(delayed)
    lean = #lean_due == 0
  end
  -- The first `limit` waiting jobs, each taken: its record has a payload, no group, and a
  -- delivery count these scripts write.
  local heads = lean and redis.call('ZRANGE', waiting, '0', string.format('%d', limit - 1)) or {}
  local records = {}
  for i, id in ipairs(heads) do
    local group, payload, deliveries, trace = unpack(redis.call('HMGET', jobs, 'g:' .. id, 'd:' .. id, 'n:' .. id,
      'c:' .. id))
    if acked[id] or group or not payload or (deliveries and not safe_integer(deliveries, 0, 999999999999998)) then
      lean = false
      break
    end
    records[i] = { payload = payload, delivery = (deliveries and tonumber(deliveries) or 0) + 1, trace = trace }
  end
  if lean then
    for _, id in ipairs(acked) do
      end_acked(id, '', acked_options[id])
    end
    if cards[completed] > 0 then
      trim_ended(completed, jobs, now, settings.completed_max, settings.completed_age, limit, cards[completed])
    end
    local taken = {}
    for i, id in ipairs(heads) do
      redis.call('ZREM', waiting, id)
      local held, deadline = lease_job(id, records[i].delivery)
      taken[i] = { id, held, records[i].delivery, deadline, false, records[i].payload, records[i].trace }
    end
    count_ends(jobs, metrics, #acked, 0, 0)
    if cards[signal] == 0 and redis.call('ZCARD', waiting) > 0 then
      wake_workers(signal)
    end
    return taken
  end
end

-- Stored counts are checked before they are used; an error reply names the field.
local function bad_jobs(what, value)
  return redis.error_reply('BAD_JOBS ' .. what .. ' is ' .. shown(value) .. ', not what these scripts write')
end
local function bad_groups(what, value)
  return redis.error_reply('BAD_GROUPS ' .. what .. ' is ' .. shown(value) .. ', not what these scripts write')
end

-- The call is planned first, only reading: every check that can refuse it runs before
-- the first write, so a refused call changes nothing. The plan is written after it.

-- Each group the plan touches, as the call leaves it: its running count (checked when
-- first read), and how many of its parked jobs go back to waiting (each checked).
local running = {}
local function running_count(group)
  if running[group] == nil then
    local count, bad = running_of(groups, group)
    if bad then
      return nil, bad
    end
    running[group] = count
  end
  return running[group]
end
local unparked = {}
-- The next n parked jobs of `group`, after those the plan already sends back.
local function next_parked(group, n)
  if cards[parked] == 0 then
    return {}
  end
  local from = unparked[group] or 0
  local found, bad = parked_of(parked, group, from + n)
  if bad then
    return nil, bad
  end
  local next_jobs = {}
  for i = from + 1, #found do
    next_jobs[#next_jobs + 1] = found[i]
  end
  unparked[group] = from + #next_jobs
  return next_jobs
end
-- A job of `group` ends: one fewer running, and the group's first parked job, if it has
-- one, goes back (a list of at most one, as release_slot takes it).
local function ending(group)
  local count, bad = running_count(group)
  if bad then
    return nil, bad
  end
  running[group] = math.max(count - 1, 0)
  return next_parked(group, 1)
end
-- The jobs the chores put in waiting: id -> rank, the last one written winning.
local arriving = {}
local function arrive(list)
  for _, job in ipairs(list) do
    arriving[job.id] = job.rank
  end
end

-- 0. The jobs this worker finished (`done`), acked first as ack.lua acks one: each is
-- held under its token and named once.
local done = { unpack(ARGV, 5) }
if #done % 3 ~= 0 then
  return redis.error_reply('BAD_DONE done must be id, token, result triples; got ' .. #done .. ' values')
end
-- The parent of each flow's child that ends in this call (see add_flow.lua).
-- The acked jobs' results and own options, for those kept as completed.
local finished, results_of, parents, given, options_of = {}, {}, {}, {}, {}
for i = 1, #done, 3 do
  local id = done[i]
  if id == '' or done[i + 1] == '' then
    return redis.error_reply('BAD_DONE an id or token of done is empty')
  end
  local group, bad, _, link, stored_options = held_group(jobs, id, done[i + 1])
  if bad then
    return bad
  end
  parents[id], bad = parent_of(jobs, blocked, link)
  if bad then
    return bad
  end
  if keep then
    options_of[id], bad = retry_of(id, stored_options)
    if bad then
      return bad
    end
  end
  if finished[id] ~= nil then
    return redis.error_reply('LEASE_LOST job ' .. shown(id) .. ' is in done twice')
  end
  local result = done[i + 2]
  local too_big = result_too_big(id, result, settings.result_max)
  if too_big then
    return too_big
  end
  -- With events on, an ack without a result keeps an empty one (see ack.lua).
  if result ~= '' or settings.events_max > 0 then
    results_of[#results_of + 1] = { id = id, result = result }
  end
  finished[id] = group
  finished[#finished + 1] = id
  given[id] = result
end
local freed = {}
for _, id in ipairs(finished) do
  local group = finished[id]
  if group then
    local first, bad = ending(group)
    if bad then
      return bad
    end
    freed[id] = first
    arrive(first)
  end
end

-- 1. Leases that ran out: the job goes back to waiting, or to dead after its last
-- delivery, and its group's slot is released.
local lapsed = lean_lapsed or due_in(leased)
local records, released = {}, {}
local lapses, deaths = 0, 0
for i, id in ipairs(lapsed) do
  local group, deliveries, rank, link, stored_retry = unpack(redis.call('HMGET', jobs, 'g:' .. id, 'n:' .. id,
    'r:' .. id, 'P:' .. id, 'o:' .. id))
  if rank and not safe_integer(rank, 1, 2559999999999999) then
    return bad_jobs('the rank of job ' .. shown(id), rank)
  end
  if rank and not (deliveries and safe_integer(deliveries, 0, 999999999999999)) then
    return bad_jobs('the delivery count of job ' .. shown(id), deliveries or '')
  end
  -- A finished job whose lease had run out was acked above: nothing to hand back.
  if finished[id] == nil then
    records[i] = { group = group, rank = rank and tonumber(rank) }
    -- The job's own attempts, where add.lua gave it some, win over max_deliveries.
    local retry, bad_retry = retry_of(id, stored_retry)
    if bad_retry then
      return bad_retry
    end
    records[i].dead = rank and tonumber(deliveries) >= deliveries_allowed(retry, max_deliveries)
    records[i].dropped = retry and retry.drop_dead
    if records[i].dead then
      local bad
      parents[id], bad = parent_of(jobs, blocked, link)
      if bad then
        return bad
      end
    end
    lapses = lapses + 1
    if rank then
      deaths = deaths + (records[i].dead and 1 or 0)
    end
    if group then
      local first, bad = ending(group)
      if bad then
        return bad
      end
      released[i] = first
      arrive(first)
    end
    if rank and not records[i].dead then
      arriving[id] = records[i].rank
    end
  end
end

-- The queue's concurrency: no more jobs held than it allows, once this call's acks and
-- handed-back leases are written.
if settings.queue_concurrency > 0 then
  local held = redis.call('ZCARD', leased) - #finished - lapses
  take_limit = math.max(0, math.min(take_limit, settings.queue_concurrency - held))
end

-- 2. Delayed jobs that are due.
local due = lean_due or due_in(delayed)
local due_ranks = {}
for i, id in ipairs(due) do
  local rank = redis.call('HGET', jobs, 'r:' .. id)
  if rank and not safe_integer(rank, 1, 2559999999999999) then
    return bad_jobs('the rank of job ' .. shown(id), rank)
  end
  due_ranks[i] = rank and tonumber(rank)
  if rank then
    arriving[id] = due_ranks[i]
  end
end

-- 3. Groups whose rate window has passed: as many parked jobs as may start now go back;
-- any left are parked again by step 4 with a new wake time, or freed by a job that ends.
local woken = cards[wake] > 0 and due_in(wake) or {}
local budget = limit
local wakes = {}
for i, group in ipairs(woken) do
  -- With no rate limit any more (the setting changed), as many as the budget allows.
  local n = group_rate > 0 and group_rate or budget
  if group_concurrency > 0 then
    local count, bad = running_count(group)
    if bad then
      return bad
    end
    n = math.min(n, group_concurrency - count)
  end
  n = math.min(n, budget)
  local found = {}
  if n > 0 then
    local bad
    found, bad = next_parked(group, n)
    if bad then
      return bad
    end
    budget = budget - #found
    arrive(found)
  end
  -- Out of budget: look again on the next call rather than leave the group parked.
  wakes[i] = { found = found, again = budget == 0 }
end

-- 3b. Turns off (group_turns 0) while groups still have turns: the jobs of up to `limit`
-- of them, up to `limit` jobs, go back to waiting; a group keeps its turn while it may
-- have more.
local turns_on = settings.group_turns == 1
local drained = {}
if not turns_on and cards[turns] > 0 then
  local left = limit
  local rows = redis.call('ZRANGE', turns, '0', string.format('%d', limit - 1))
  for _, group in ipairs(rows) do
    if left == 0 then
      break
    end
    local found, bad = next_parked(group, left)
    if bad then
      return bad
    end
    left = left - #found
    arrive(found)
    drained[#drained + 1] = { group = group, found = found, done = left > 0 }
  end
end

-- The rate window of a group is a ring of its last `group_rate` start times, in hash
-- fields: s:<group>:<i> for i = started mod ring size, so a check and a start cost O(1).
-- A ring of another size (the setting changed) starts anew: its slots are written again
-- before they are read, and those above the new size are old start times, o:<group>
-- saying where they end. Old start times, and the rings of groups idle for a whole
-- `group_period`, are dropped at most RING_BUDGET per call; later calls drop the rest.
local RING_BUDGET = 400
-- Where the start times of a ring, as stored, may end (a size these scripts did not
-- write may be any size they write).
local function extent(size)
  return size and (safe_integer(size, 0, 1000) or 1000) or 0
end
local rings, ring_order = {}, {}
local function ring_of(group)
  if rings[group] then
    return rings[group]
  end
  local started, size, old = unpack(redis.call('HMGET', groups, 'p:' .. group, 'z:' .. group, 'o:' .. group))
  local ring = { started = 0, slots = {}, old = extent(old), stored_old = old }
  if started and safe_integer(started, 0, 999999999999999) and size == string.format('%d', group_rate) then
    ring.started = tonumber(started)
  elseif started then
    -- The ring starts anew (from 0) with this call's start of the group's job, and its
    -- start times become old ones.
    ring.old = math.max(ring.old, extent(size or '1000'))
  end
  rings[group] = ring
  ring_order[#ring_order + 1] = group
  return ring
end

-- 4. Take in rank order; park the jobs of groups at a limit. Examined: the first
-- 4 × `limit` jobs waiting once the chores are written, that is the head of waiting and
-- the jobs the chores add, in rank order (one rank's jobs by their bytes, as a sorted set
-- orders them).
local function bytes_less(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x < y
    end
  end
  return #a < #b
end
-- A score in a reply costs the server the formatting of a number: the heads' ranks come
-- with them only where all are needed (arrivals to merge in, turns to move them to), else
-- each is read when its job is parked (false until then).
local with_ranks = turns_on or next(arriving) ~= nil
local last_head = string.format('%d', 4 * limit - 1)
local heads = with_ranks and redis.call('ZRANGE', waiting, '0', last_head, 'WITHSCORES')
  or redis.call('ZRANGE', waiting, '0', last_head)
local queue = {}
for i = 1, #heads, with_ranks and 2 or 1 do
  if arriving[heads[i]] == nil then
    queue[#queue + 1] = { id = heads[i], rank = with_ranks and tonumber(heads[i + 1]) }
  end
end
-- `heads` come in that order already: only arrivals need a sort.
if next(arriving) ~= nil then
  for id, rank in pairs(arriving) do
    queue[#queue + 1] = { id = id, rank = rank }
  end
  table.sort(queue, function(a, b)
    if a.rank ~= b.rank then
      return a.rank < b.rank
    end
    return bytes_less(a.id, b.id)
  end)
end
-- The queue's rate ring (#qn its starts, #qs:<i> the start times, in `jobs`), as the
-- groups' rings: a job starts only while the oldest of the last `queue_rate` starts is a
-- whole period old.
local queue_ring
if queue_rate > 0 then
  if queue_started and not safe_integer(queue_started, 0, 999999999999999) then
    return bad_jobs('the start count #qn', queue_started)
  end
  queue_ring = { started = tonumber(queue_started or '0'), slots = {} }
end
local function queue_may_start()
  if not queue_ring or queue_ring.started < queue_rate then
    return true
  end
  local slot = queue_ring.started % queue_rate
  if not queue_ring.slots[slot] then
    local stored = redis.call('HGET', jobs, '#qs:' .. slot)
    queue_ring.slots[slot] = stored and safe_integer(stored, 0, 999999999999999)
    if not queue_ring.slots[slot] then
      return nil, bad_jobs('start time #qs:' .. slot, stored or '')
    end
  end
  return queue_ring.slots[slot] + settings.queue_period <= now
end
-- Until when a handler rate-limited a group (rate_limit_group.lua): 0 for never.
local limited = {}
local function limited_until(group)
  if limited[group] == nil then
    local stored = redis.call('HGET', groups, 'u:' .. group)
    limited[group] = stored and safe_integer(stored, 0, 999999999999999)
    if stored and not limited[group] then
      return nil, bad_groups('the hold-back time of group ' .. shown(group), stored)
    end
    limited[group] = limited[group] or 0
  end
  return limited[group]
end

local plan = {}
local count = 0
-- The step of `head` ({ id, rank }, and with turns its `member` of `parked` and its `group`,
-- '' for none): taken, parked or dropped; nil and an error reply for data these scripts do
-- not write.
local function consider(head)
  local id = head.id
  local step = { id = id, turn_member = head.member }
  -- An acked job's record is gone (forget_job).
  local group, payload, deliveries, trace = false, false, false, false
  if finished[id] == nil then
    group, payload, deliveries, trace = unpack(redis.call('HMGET', jobs, 'g:' .. id, 'd:' .. id, 'n:' .. id,
      'c:' .. id))
  end
  if payload and deliveries and not safe_integer(deliveries, 0, 999999999999998) then
    return nil, bad_jobs('the delivery count of job ' .. shown(id), deliveries)
  end
  if payload and head.member and (group or '') ~= head.group then
    return nil, redis.error_reply('BAD_PARKED parked holds ' .. shown(head.member) .. ' of job ' .. shown(id)
      .. ', whose group is ' .. shown(group or ''))
  end
  -- A member without a record (deleted by hand) is dropped: there is nothing to run.
  step.drop = not payload
  step.group = group
  if payload and group then
    local held, bad = running_count(group)
    if bad then
      return nil, bad
    end
    local held_back
    held_back, bad = limited_until(group)
    if bad then
      return nil, bad
    end
    if group_concurrency > 0 and held >= group_concurrency then
      step.park = true
    elseif held_back > now then
      step.park = true
      step.wake = held_back
    elseif group_rate > 0 then
      local ring = ring_of(group)
      if ring.started >= group_rate then
        local slot = ring.started % group_rate
        local oldest = ring.slots[slot]
        if not oldest then
          local stored = redis.call('HGET', groups, 's:' .. group .. ':' .. slot)
          oldest = stored and safe_integer(stored, 0, 999999999999999)
          if not oldest then
            return nil, bad_groups('start time ' .. slot .. ' of group ' .. shown(group), stored or '')
          end
        end
        if oldest + group_period > now then
          step.park = true
          step.wake = oldest + group_period
        end
      end
    end
    -- A parked job is named by its rank, which must be one.
    if step.park and not head.rank then
      head.rank = tonumber(redis.call('ZSCORE', waiting, id))
    end
    if step.park and not (head.rank >= 1 and head.rank <= 2559999999999999 and head.rank % 1 == 0) then
      return nil, redis.error_reply('BAD_WAITING job ' .. shown(id) .. ' waits at ' .. shown(tostring(head.rank))
        .. ', not a rank these scripts write')
    end
    step.member = step.park and (head.member or parked_member(group, head.rank, id))
  end
  if payload and not step.park then
    step.payload = payload
    step.trace = trace
    -- Its count as read above (none before the first delivery): one write below.
    step.delivery = (deliveries and tonumber(deliveries) or 0) + 1
    count = count + 1
    if queue_ring then
      step.queue_slot = queue_ring.started % queue_rate
      queue_ring.slots[step.queue_slot] = now
      queue_ring.started = queue_ring.started + 1
    end
    if group then
      running[group] = running[group] + 1
      if group_rate > 0 then
        -- ring_of read it for the rate check above.
        local ring = ring_of(group)
        step.slot = ring.started % group_rate
        ring.slots[step.slot] = now
        ring.started = ring.started + 1
        step.started = ring.started
      end
    end
  end
  return step
end
if not turns_on then
  for _, head in ipairs(queue) do
    if count >= take_limit or #plan >= 4 * limit then
      break
    end
    local may_start, bad_ring = queue_may_start()
    if bad_ring then
      return bad_ring
    elseif not may_start then
      break
    end
    local step, bad = consider(head)
    if not step then
      return bad
    end
    plan[#plan + 1] = step
  end
end

-- 4 with turns. The first 2 × `limit` jobs of `queue` go to their groups' ranges of
-- `parked` (`moved`), and a group without a turn gets the next one; then turns are
-- taken: the lowest turn's group gives its first job (in member order: rank, then id),
-- and goes behind every other group while it has more.
local moved, turn_of, touched = {}, {}, {}
if turns_on and take_limit > 0 then
  local fresh = {}
  for i = 1, math.min(#queue, 2 * limit) do
    local head = queue[i]
    local group, state = false, false
    if finished[head.id] == nil then
      group, state = unpack(redis.call('HMGET', jobs, 'g:' .. head.id, 's:' .. head.id))
    end
    local move = { id = head.id, drop = not state }
    if state then
      if not (head.rank >= 1 and head.rank <= 2559999999999999 and head.rank % 1 == 0) then
        return redis.error_reply('BAD_WAITING job ' .. shown(head.id) .. ' waits at ' .. shown(tostring(head.rank))
          .. ', not a rank these scripts write')
      end
      move.group = group or ''
      move.member = parked_member(move.group, head.rank, head.id)
      if not fresh[move.group] then
        fresh[move.group] = {}
        fresh[#fresh + 1] = move.group
      end
      table.insert(fresh[move.group], { member = move.member, id = head.id, rank = head.rank })
    end
    moved[#moved + 1] = move
  end
  -- The turns: the first 2 × `limit` read; when there may be more, those above the last
  -- read wait for a later call (`bound`).
  local rows = cards[turns] > 0
    and redis.call('ZRANGE', turns, '0', string.format('%d', 2 * limit - 1), 'WITHSCORES') or {}
  local bound = math.huge
  for i = 1, #rows, 2 do
    local n, bad = turn_number(turns, rows[i], rows[i + 1])
    if not n then
      return bad
    end
    turn_of[rows[i]] = n
    bound = (#rows == 4 * limit) and n or bound
  end
  local top, bad_top = last_turn(turns)
  if not top then
    return bad_top
  end
  for _, group in ipairs(fresh) do
    table.sort(fresh[group], function(a, b)
      return bytes_less(a.member, b.member)
    end)
    if turn_of[group] == nil then
      local score = redis.call('ZSCORE', turns, group)
      local n, bad_turn
      if score then
        n, bad_turn = turn_number(turns, group, score)
        if not n then
          return bad_turn
        end
      end
      if not n then
        top = top + 1
        n = top
        touched[group] = true
      end
      turn_of[group] = n
    end
  end
  -- The jobs of `group` in member order: its range of `parked` after the ones the chores
  -- send back to waiting, merged with its `fresh` ones; peeked, then passed.
  local cursors = {}
  local function peek(group)
    local c = cursors[group]
    if not c then
      c = { offset = unparked[group] or 0, fresh = fresh[group] or {}, f = 1 }
      cursors[group] = c
    end
    if c.stored == nil then
      local prefix = parked_prefix(group)
      local member = redis.call('ZRANGE', parked, '[' .. prefix, '(' .. prefix .. ':', 'BYLEX', 'LIMIT',
        string.format('%d', c.offset), '1')[1]
      c.stored = false
      if member then
        local rank = string.match(string.sub(member, #prefix + 1, #prefix + 16), '^' .. string.rep('%d', 16) .. '$')
        rank = rank and tonumber(rank)
        if not (rank and rank >= 1 and rank <= 2559999999999999 and #member > #prefix + 16) then
          return nil, redis.error_reply('BAD_PARKED parked holds ' .. shown(member) .. ', not a parked job')
        end
        c.stored = { member = member, id = string.sub(member, #prefix + 17), rank = rank }
      end
    end
    local f = c.fresh[c.f]
    if c.stored and f and c.stored.member == f.member then
      -- The same job, sent back by a chore and moved again: once.
      c.f = c.f + 1
      f = c.fresh[c.f]
    end
    if c.stored and (not f or bytes_less(c.stored.member, f.member)) then
      c.next_from = 'stored'
      return c.stored
    end
    c.next_from = f and 'fresh'
    return f or false
  end
  local function pass(group)
    local c = cursors[group]
    if c.next_from == 'stored' then
      c.offset = c.offset + 1
      c.stored = nil
    else
      c.f = c.f + 1
    end
  end
  -- The groups in turn order, sorted once: a group that goes again gets the next turn,
  -- above every other, so it joins at the end; an entry whose group's turn has changed
  -- since is passed over.
  local order = {}
  for g, n in pairs(turn_of) do
    if n then
      order[#order + 1] = { group = g, turn = n }
    end
  end
  table.sort(order, function(a, b)
    if a.turn ~= b.turn then
      return a.turn < b.turn
    end
    return bytes_less(a.group, b.group)
  end)
  local next_in_order = 1
  local examined = 0
  while count < take_limit and examined < 2 * limit do
    local entry = order[next_in_order]
    while entry and turn_of[entry.group] ~= entry.turn do
      next_in_order = next_in_order + 1
      entry = order[next_in_order]
    end
    if not entry or entry.turn > bound then
      break
    end
    next_in_order = next_in_order + 1
    local group = entry.group
    local may_start, bad_ring = queue_may_start()
    if bad_ring then
      return bad_ring
    elseif not may_start then
      break
    end
    examined = examined + 1
    local job, bad = peek(group)
    if job == nil then
      return bad
    end
    touched[group] = true
    if not job then
      -- No job left (removed, cleaned, delayed since): the group's turn goes.
      turn_of[group] = false
    else
      pass(group)
      local step
      step, bad = consider({ id = job.id, rank = job.rank, member = job.member, group = group })
      if not step then
        return bad
      end
      plan[#plan + 1] = step
      if step.park then
        -- At a limit: its jobs stay parked, and it gets a turn when one comes back.
        turn_of[group] = false
      elseif not step.drop then
        local more
        more, bad = peek(group)
        if more == nil then
          return bad
        end
        top = top + 1
        turn_of[group] = more and top or false
        if more then
          order[#order + 1] = { group = group, turn = top }
        end
      end
    end
  end
end

-- Writing the plan: nothing below can refuse the call.
for _, id in ipairs(finished) do
  local group = finished[id]
  end_acked(id, given[id], options_of[id])
  if group then
    release_slot(groups, parked, waiting, jobs, group, freed[id])
  end
  emit(events, settings.events_max, 'completed', id)
  -- The last child of a flow to end lets its parent run (workers are woken below).
  if child_ended(jobs, waiting, false, blocked, parents[id], id, true, now) then
    emit(events, settings.events_max, 'waiting', parents[id].id)
  end
end
for _, kept_result in ipairs(results_of) do
  keep_result(results, kept, kept_result.id, kept_result.result, now, settings.result_ttl)
end
if cards[kept] > 0 then
  drop_results(results, kept, now, limit)
end

for i, id in ipairs(lapsed) do
  local record = records[i]
  if record then
    redis.call('ZREM', leased, id)
    redis.call('HDEL', jobs, 't:' .. id)
    if record.group then
      release_slot(groups, parked, waiting, jobs, record.group, released[i])
    end
    if not record.rank then
      -- No record (deleted by hand): nothing to hand back.
      redis.call('HDEL', jobs, 's:' .. id)
    elseif record.dead then
      if record.dropped then
        drop_record(jobs, id)
      else
        redis.call('ZADD', dead, now_text, id)
        redis.call('HSET', jobs, 's:' .. id, 'dead', 'e:' .. id, 'lease ran out on the last delivery')
      end
      emit(events, settings.events_max, 'dead', id, 'error', 'lease ran out on the last delivery')
      local parent_now = child_ended(jobs, waiting, dead, blocked, parents[id], id, false, now)
      if parent_now == 'dead' then
        emit(events, settings.events_max, 'dead', parents[id].id, 'error', 'child ' .. id .. ' failed')
      elseif parent_now == 'waiting' then
        emit(events, settings.events_max, 'waiting', parents[id].id)
      end
    else
      redis.call('ZADD', waiting, string.format('%d', record.rank), id)
      redis.call('HSET', jobs, 's:' .. id, 'waiting')
      emit(events, settings.events_max, 'stalled', id, 'error', 'lease ran out')
    end
  end
end

for i, id in ipairs(due) do
  redis.call('ZREM', delayed, id)
  if due_ranks[i] then
    redis.call('ZADD', waiting, string.format('%d', due_ranks[i]), id)
    redis.call('HSET', jobs, 's:' .. id, 'waiting')
    emit(events, settings.events_max, 'waiting', id)
  else
    -- No record (deleted by hand): nothing to wait for.
    redis.call('HDEL', jobs, 's:' .. id)
  end
end

for i, group in ipairs(woken) do
  redis.call('ZREM', wake, group)
  unpark(parked, waiting, jobs, wakes[i].found)
  if wakes[i].again then
    redis.call('ZADD', wake, now_text, group)
  end
end

-- Old start times go first, within the budget: those above each ring read by step 4.
local ring_budget = RING_BUDGET
local function drop_slots(group, low, high)
  local fields = {}
  for i = low, high - 1 do
    fields[#fields + 1] = 's:' .. group .. ':' .. i
  end
  if #fields > 0 then
    redis.call('HDEL', groups, unpack(fields))
  end
  ring_budget = ring_budget - #fields
end
-- Drops the old start times above a ring of `group_rate` start times, from `top` down,
-- within the budget; notes where those left end (`stored`: the note as read), and
-- answers whether some above the ring are left. Below the ring's size, old start times
-- are written again as the ring fills (`started` starts since it began).
local function drop_old(group, top, started, stored)
  local low = top
  if top > group_rate then
    low = math.max(group_rate, top - ring_budget)
    drop_slots(group, low, top)
  end
  local left = (low > group_rate or started < low) and string.format('%d', low)
  if left and left ~= stored then
    redis.call('HSET', groups, 'o:' .. group, left)
  elseif not left and stored then
    redis.call('HDEL', groups, 'o:' .. group)
  end
  return low > group_rate
end
local unfinished = {}
for _, group in ipairs(ring_order) do
  local ring = rings[group]
  if drop_old(group, ring.old, ring.started, ring.stored_old) then
    unfinished[#unfinished + 1] = group
  end
end

-- Turns off: the drained groups' jobs go back to waiting; a group drained to the end
-- loses its turn.
for _, drain in ipairs(drained) do
  unpark(parked, waiting, jobs, drain.found)
  if drain.done then
    redis.call('ZREM', turns, drain.group)
  end
end
-- Turns on: the moved jobs wait in their groups' ranges, and the turns are as planned.
for _, move in ipairs(moved) do
  redis.call('ZREM', waiting, move.id)
  if move.drop then
    drop_record(jobs, move.id)
  else
    redis.call('ZADD', parked, '0', move.member)
    redis.call('HSET', jobs, 's:' .. move.id, 'parked')
  end
end
for group in pairs(touched) do
  if turn_of[group] then
    redis.call('ZADD', turns, string.format('%d', turn_of[group]), group)
  else
    redis.call('ZREM', turns, group)
  end
end

local taken = {}
for _, step in ipairs(plan) do
  local id = step.id
  if step.turn_member then
    if not step.park then
      redis.call('ZREM', parked, step.turn_member)
    end
  else
    redis.call('ZREM', waiting, id)
  end
  if step.drop then
    drop_record(jobs, id)
  elseif step.park then
    redis.call('ZADD', parked, '0', step.member)
    redis.call('HSET', jobs, 's:' .. id, 'parked')
    if step.wake then
      redis.call('ZADD', wake, 'LT', string.format('%d', step.wake), step.group)
    end
  else
    local held, deadline = lease_job(id, step.delivery)
    emit(events, settings.events_max, 'active', id, 'delivery', string.format('%d', step.delivery))
    if step.queue_slot then
      redis.call('HSET', jobs, '#qs:' .. step.queue_slot, now_text, '#qn', string.format('%d', queue_ring.started))
    end
    if step.group then
      redis.call('HINCRBY', groups, 'r:' .. step.group, '1')
      if step.slot then
        redis.call('HSET', groups, 's:' .. step.group .. ':' .. step.slot, now_text,
          'p:' .. step.group, string.format('%d', step.started), 'z:' .. step.group, string.format('%d', group_rate))
        redis.call('ZADD', idle, string.format('%d', now + group_period), step.group)
      end
    end
    -- Numbers go out as integer replies: each is whole and below 2^53.
    taken[#taken + 1] = { id, held, step.delivery, deadline, step.group ~= '' and step.group or false, step.payload,
      step.trace }
  end
end

-- A group with old start times left is due in `idle` at once: the next calls drop them
-- (step 5), and then put it back at the time its ring stops counting.
for _, group in ipairs(unfinished) do
  redis.call('ZADD', idle, now_text, group)
end

-- 5. Rings whose start times no longer count, with what is left of the budget: each goes
-- from its top down; a ring the budget does not reach stays due, for the next call. A
-- group due for its old start times only, whose ring still counts, keeps its ring.
local quiet = cards[idle] > 0 and due_in(idle) or {}
for _, group in ipairs(quiet) do
  if ring_budget <= 0 then
    break
  end
  local started, size, old = unpack(redis.call('HMGET', groups, 'p:' .. group, 'z:' .. group, 'o:' .. group))
  local newest
  if group_rate > 0 and size == string.format('%d', group_rate) and started
      and safe_integer(started, 1, 999999999999999) then
    local stored = redis.call('HGET', groups, 's:' .. group .. ':' .. ((tonumber(started) - 1) % group_rate))
    newest = stored and safe_integer(stored, 0, 999999999999999)
  end
  if newest and newest + group_period > now then
    if not drop_old(group, extent(old), tonumber(started), old) then
      redis.call('ZADD', idle, string.format('%d', newest + group_period), group)
    end
  else
    local top = extent(old)
    if started and safe_integer(started, 0, 999999999999999) then
      top = math.max(top, math.min(tonumber(started), extent(size or '1000')))
    elseif started or size then
      top = math.max(top, extent(size or '1000'))
    end
    local low = math.max(0, top - ring_budget)
    drop_slots(group, low, top)
    redis.call('HDEL', groups, 'p:' .. group, 'z:' .. group)
    if low > 0 then
      redis.call('HSET', groups, 'o:' .. group, string.format('%d', low))
    else
      redis.call('HDEL', groups, 'o:' .. group)
      redis.call('ZREM', idle, group)
    end
  end
  -- A hold-back time (rate_limit_group.lua) goes once it has passed; until then the group
  -- stays due for it. One that is no time is dropped: it only ever held jobs back.
  local until_ms = redis.call('HGET', groups, 'u:' .. group)
  until_ms = until_ms and (safe_integer(until_ms, 0, 999999999999999) or 0)
  if until_ms and until_ms > now then
    redis.call('ZADD', idle, 'GT', string.format('%d', until_ms), group)
  elseif until_ms then
    redis.call('HDEL', groups, 'u:' .. group)
  end
end

-- The jobs this call acked and the leases that ran out count in the metrics; the
-- dead-letter set keeps to its cap.
count_ends(jobs, metrics, #finished, lapses, deaths)
if cards[dead] + deaths > 0 then
  trim_ended(dead, jobs, now, settings.dead_max, settings.dead_age, limit)
end
-- The completed jobs kept, those acked here counted (end_acked).
if cards[completed] > 0 then
  trim_ended(completed, jobs, now, settings.completed_max, settings.completed_age, limit, cards[completed])
end

-- 6. Jobs are left ready (more than this call took, or back from a lapse or a delay):
-- the next waiting worker wakes, unless the queue is paused or `signal` still holds its
-- member (no worker has waited since it was filled: one would have taken it).
if not paused and cards[signal] == 0 and (redis.call('ZCARD', waiting) > 0
    or ((turns_on or cards[turns] > 0) and redis.call('ZCARD', turns) > 0)) then
  wake_workers(signal)
end
return taken
