--- Ends a failed delivery: the job is retried after `delay`, or goes to the dead-letter queue.
---
--- Beyond the books. Only the holder of the job's current lease can nack it (see
--- `ack.lua`). A job delivered `max_deliveries` times goes to `dead` with `reason`, where
--- an operator can read it (`list.lua`, `job.lua`), requeue it (`requeue.lua`) or drop it
--- (`remove.lua`). Otherwise it waits in `delayed` for `delay` (holding no lease), or goes
--- straight back to `waiting` at its rank when `delay` is 0. The caller picks the delay:
--- a fixed one, or a backoff that grows with the delivery count; `max_deliveries` 1 fails
--- the job for good (BullMQ's `UnrecoverableError`). A job added with retry options of
--- its own (see `add.lua`) is retried by them instead: its attempts replace
--- `max_deliveries` (but for 1) and its backoff replaces `delay`. The failure counts in the queue's
--- metrics (`metrics.lua`), and a death drops up to two dead jobs beyond the cap that
--- `configure.lua` sets (by count and by age). With events on, it appends `failed` (to be
--- retried, then `delayed` with when it is due when it waits out a delay) or `dead`, with
--- `reason` as `error`. A flow's child that dies tells its parent
--- (see `add_flow.lua`). A job added with `remove_on_fail` is dropped instead of going
--- to `dead` (the reply still says 'dead').
--- @key waiting zset {<name>}:waiting  job id -> rank: (255 - priority) × 10^13 + 5 × 10^12 ± arrival (- if LIFO)
--- @key delayed zset {<name>}:delayed  job id -> when it becomes waiting (ms, server clock)
--- @key leased zset {<name>}:leased    job id -> lease deadline (ms, server clock)
--- @key dead zset {<name>}:dead        job id -> when it died (ms, server clock): the dead-letter queue
--- @key parked zset {<name>}:parked    held-back jobs of groups at their limit, all at score 0 (see take.lua)
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @key groups hash {<name>}:groups  per group g: r:<g> running; p:<g>, z:<g>, s:<g>:<i>, o:<g>: rate ring
--- @key signal zset {<name>}:signal    one member while a job may be ready: workers wait on it with BZPOPMIN
--- @key events stream {<name>}:events  what happened to each job: event, job, and an error or progress
--- @key blocked zset {<name>}:blocked  flow parent id -> when it was added (ms, server clock), while blocked
--- @arg id string non-empty      the job's id
--- @arg token string non-empty   the lease token `take.lua` returned with the job
--- @arg delay ms 0..=10^12       how long before the job can be taken again; 0 for at once (unless the job's own)
--- @arg max_deliveries uint 1..=1000    a job delivered this many times goes to `dead` (unless the job's own)
--- @arg reason bytes             why it failed, kept with the job
--- @return (string, int)         the new state ('waiting', 'delayed' or 'dead'), and when it can be taken again or died
--- @error BAD_ARGS               not 10 keys and 5 arguments
--- @error BAD_ID                 empty
--- @error BAD_TOKEN              empty
--- @error BAD_DELAY              not whole milliseconds within its range
--- @error BAD_MAX_DELIVERIES     not an integer within its range
--- @error BAD_KEYS               a key not named as its template says
--- @error LEASE_LOST             the job is not held under `token` (acked, handed to another worker, or gone)
--- @error BAD_JOBS               `jobs` holds a field, setting or metric these scripts do not write; nothing written
--- @error BAD_GROUPS             `groups` holds a running count these scripts did not write; nothing was written
--- @error BAD_PARKED             `parked` holds a member of the group that take.lua did not write; nothing was written
--- @uses slot_of release_slot wake_workers settings_of metrics_at count_ends trim_ended emit retry_of
--- @uses deliveries_allowed retry_delay drop_record
--- @uses parent_of child_ended safe_integer shown
--- @default max_deliveries 5     WorkQueue::new: 5 deliveries
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
-- What a job of `group` ending needs, read before its writes: the group's first parked
-- job (a list of at most one); nil and an error reply when the group's running count or
-- that job is not what these scripts write.
local function slot_of(groups_hash, parked_set, group)
  local _, bad = running_of(groups_hash, group)
  if bad then
    return nil, bad
  end
  return parked_of(parked_set, group, 1)
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
-- How long a job with retry options `retry` (retry_of) waits after its delivery number
-- `delivery` failed, when the caller says `caller_delay`: the caller's unless the job has
-- a backoff of its own; an exponential one at a point from half of its delay to all of
-- it that `token` (the lease's random part) picks, as the crate's Backoff::jittered does.
local function retry_delay(retry, delivery, token, caller_delay)
  if not retry or retry.backoff == 'w' then
    return caller_delay
  end
  if retry.backoff == 'f' then
    return retry.delay
  end
  local full = retry.max
  if delivery <= 40 then
    full = math.min(retry.max, retry.delay * 2 ^ (delivery - 1))
  end
  local half = math.floor(full / 2)
  return half + math.floor((full - half) * tonumber(string.sub(redis.sha1hex(token), 1, 4), 16) / 65535)
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 10 or #ARGV ~= 5 then
  return redis.error_reply('BAD_ARGS expected 10 keys and 5 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local delayed = KEYS[2]
local leased = KEYS[3]
local dead = KEYS[4]
local parked = KEYS[5]
local jobs = KEYS[6]
local groups = KEYS[7]
local signal = KEYS[8]
local events = KEYS[9]
local blocked = KEYS[10]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID must not be empty')
end
local token = ARGV[2]
if token == '' then
  return redis.error_reply('BAD_TOKEN must not be empty')
end
local delay = ARGV[3] == '0' and 0 or tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not delay or delay > 1000000000000 then
  return redis.error_reply('BAD_DELAY must be whole milliseconds from 0 to 1000000000000, got ' .. shown(ARGV[3]))
end
local max_deliveries = tonumber(string.match(ARGV[4], '^[1-9]%d*$'))
if not max_deliveries or max_deliveries > 1000 then
  return redis.error_reply('BAD_MAX_DELIVERIES must be an integer from 1 to 1000, got ' .. shown(ARGV[4]))
end
local reason = ARGV[5]
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(waiting, '^(.+):waiting$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:waiting, got ' .. shown(waiting))
end
if delayed ~= tag_of_keys .. ':delayed' or leased ~= tag_of_keys .. ':leased' or dead ~= tag_of_keys .. ':dead' or
    parked ~= tag_of_keys .. ':parked' or jobs ~= tag_of_keys .. ':jobs' or groups ~= tag_of_keys .. ':groups' or
    signal ~= tag_of_keys .. ':signal' or events ~= tag_of_keys .. ':events' or
    blocked ~= tag_of_keys .. ':blocked' then
  for i, each in ipairs({ ':delayed', ':leased', ':dead', ':parked', ':jobs', ':groups', ':signal', ':events',
      ':blocked' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in waiting, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`jobs` is read first).
for _, zset in ipairs({ waiting, delayed, leased, dead, parked, signal }) do
  redis.call('ZCARD', zset)
end
redis.call('HLEN', groups)

-- The caller must hold the job's current lease.
local state, held = unpack(redis.call('HMGET', jobs, 's:' .. id, 't:' .. id))
if held ~= token then
  return redis.error_reply('LEASE_LOST job ' .. shown(id) .. ' is ' .. (state or 'gone')
    .. ', not held under this token')
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local group, deliveries, rank, stored_settings, link, stored_retry = unpack(redis.call('HMGET', jobs, 'g:' .. id,
  'n:' .. id, 'r:' .. id, '#settings', 'P:' .. id, 'o:' .. id))
-- Everything that can be refused is read before the first write.
if not (deliveries and safe_integer(deliveries, 0, 999999999999999)) then
  return redis.error_reply('BAD_JOBS job ' .. shown(id) .. ' has the delivery count ' .. shown(deliveries or ''))
end
if not (rank and safe_integer(rank, 1, 2559999999999999)) then
  return redis.error_reply('BAD_JOBS job ' .. shown(id) .. ' has the rank ' .. shown(rank or ''))
end
-- The job's own attempts and backoff, where add.lua gave it some, win over the caller's.
local retry, bad = retry_of(id, stored_retry)
if bad then
  return bad
end
-- 1 fails the job for good, whatever its attempts.
if max_deliveries > 1 then
  max_deliveries = deliveries_allowed(retry, max_deliveries)
end
delay = retry_delay(retry, tonumber(deliveries), token, delay)
local first
if group then
  first, bad = slot_of(groups, parked, group)
  if bad then
    return bad
  end
end
local settings, metrics, parent
parent, bad = parent_of(jobs, blocked, link)
if bad then
  return bad
end
settings, bad = settings_of(stored_settings)
if bad then
  return bad
end
metrics, bad = metrics_at(jobs, now, settings.metrics_minutes)
if bad then
  return bad
end
if settings.events_max > 0 then
  redis.call('XLEN', events)
end
redis.call('ZREM', leased, id)
redis.call('HDEL', jobs, 't:' .. id)
redis.call('HSET', jobs, 'e:' .. id, reason)
-- A job of its group that was held back may start now.
if group and release_slot(groups, parked, waiting, jobs, group, first) > 0 then
  wake_workers(signal)
end
if tonumber(deliveries) >= max_deliveries then
  if retry and retry.drop_dead then
    drop_record(jobs, id)
  else
    redis.call('ZADD', dead, now, id)
    redis.call('HSET', jobs, 's:' .. id, 'dead')
  end
  count_ends(jobs, metrics, 0, 1, 1)
  -- Two for each that dies: the set comes back under its cap after a lowering.
  trim_ended(dead, jobs, now, settings.dead_max, settings.dead_age, 2)
  emit(events, settings.events_max, 'dead', id, 'error', reason)
  -- A flow's child that dies: its parent goes on without it, or dies with it.
  local moved = child_ended(jobs, waiting, dead, blocked, parent, id, false, now)
  if moved == 'waiting' then
    wake_workers(signal)
    emit(events, settings.events_max, 'waiting', parent.id)
  elseif moved == 'dead' then
    emit(events, settings.events_max, 'dead', parent.id, 'error', 'child ' .. id .. ' failed')
  end
  return { 'dead', now }
end
count_ends(jobs, metrics, 0, 1, 0)
emit(events, settings.events_max, 'failed', id, 'error', reason)
if delay > 0 then
  redis.call('ZADD', delayed, now + delay, id)
  redis.call('HSET', jobs, 's:' .. id, 'delayed')
  emit(events, settings.events_max, 'delayed', id, 'due', string.format('%d', now + delay))
  return { 'delayed', now + delay }
end
redis.call('ZADD', waiting, rank, id)
redis.call('HSET', jobs, 's:' .. id, 'waiting')
wake_workers(signal)
return { 'waiting', now }
