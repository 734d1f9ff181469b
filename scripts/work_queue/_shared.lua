--- Helpers of the work_queue scripts, each defined here once. `redis-patterns fix` pastes
--- the ones a script names in `@uses` (and those they call) into it, and the build refuses
--- a copy that differs from this file. Keys come in as parameters, named apart from the
--- scripts' own locals. Numbers go to `redis.call` as text (`string.format('%d', n)`, or a
--- literal such as '0'): Redis 7.0 turns a Lua number into an argument with `%.17g`, which
--- costs more than most of the commands these scripts send.
-- luacheck: ignore 211
-- luacheck: read globals safe_integer shown

-- A parked job is the member <8 hex digits: the group's length><group><16-digit rank><id>,
-- so that one group's parked jobs are one lexicographic range, in rank order.
local function parked_prefix(of_group)
  return string.format('%08x', #of_group) .. of_group
end

-- The member of `parked` that holds job `job_id` of group `of_group` at `rank`.
local function parked_member(of_group, rank, job_id)
  return parked_prefix(of_group) .. string.format('%016d', rank) .. job_id
end

-- A member of `parked` read back: its group, rank and job id; nil for one take.lua did
-- not write.
local function parse_parked(member)
  local length = tonumber(string.match(member, '^%x%x%x%x%x%x%x%x') or '', 16)
  local rank = length and string.match(string.sub(member, 9 + length, 24 + length), '^' .. string.rep('%d', 16) .. '$')
  rank = rank and tonumber(rank)
  if rank and rank >= 1 and rank <= 2559999999999999 and #member > 24 + length then
    return string.sub(member, 9, 8 + length), rank, string.sub(member, 25 + length)
  end
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

-- Every field of job `job_id` in the jobs hash goes (add.lua and take.lua name them).
local function drop_record(jobs_hash, job_id)
  redis.call('HDEL', jobs_hash, 'd:' .. job_id, 's:' .. job_id, 'r:' .. job_id, 'n:' .. job_id,
    'g:' .. job_id, 't:' .. job_id, 'e:' .. job_id, 'a:' .. job_id, 'p:' .. job_id, 'P:' .. job_id,
    'w:' .. job_id, 'x:' .. job_id, 'o:' .. job_id, 'l:' .. job_id, 'b:' .. job_id, 'v:' .. job_id,
    'c:' .. job_id)
end

-- The log lines job `job_id` keeps, `stored` as log.lua writes them in its l: field: a
-- MessagePack array of strings, oldest first ({} for none); nil and a BAD_JOBS error reply
-- for a value log.lua does not write. Reads nothing.
local function log_lines(job_id, stored)
  if not stored then
    return {}
  end
  local ok, after, lines = pcall(cmsgpack.unpack_one, stored)
  local fine = ok and after == -1 and type(lines) == 'table' and #lines <= 1000
  if fine then
    -- An array of strings: as many entries as its length (no map, no holes).
    local entries = 0
    for _, each in pairs(lines) do
      entries = entries + 1
      fine = fine and type(each) == 'string'
    end
    fine = fine and entries == #lines
  end
  if not fine then
    return nil, redis.error_reply('BAD_JOBS job ' .. shown(job_id) .. ' has the log lines ' .. shown(stored)
      .. ', not what log.lua writes')
  end
  return lines
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

-- The settings `s` (as settings_of answers them) in the form configure.lua writes to
-- #settings: a MessagePack array of the form's number, 3, then the fifteen settings in
-- the order of configure.lua's arguments, which one call unpacks; while the two settings
-- of completed jobs are at their defaults, the form 2 of the first thirteen, which the
-- scripts of earlier versions read too.
local function packed_settings(s)
  local defaults = settings_of(false)
  if s.completed_max == defaults.completed_max and s.completed_age == defaults.completed_age then
    return cmsgpack.pack({ 2, s.group_concurrency, s.group_rate, s.group_period, s.queue_concurrency, s.queue_rate,
      s.queue_period, s.dead_max, s.dead_age, s.metrics_minutes, s.events_max, s.result_ttl, s.result_max,
      s.group_turns })
  end
  return cmsgpack.pack({ 3, s.group_concurrency, s.group_rate, s.group_period, s.queue_concurrency, s.queue_rate,
    s.queue_period, s.dead_max, s.dead_age, s.metrics_minutes, s.events_max, s.result_ttl, s.result_max,
    s.group_turns, s.completed_max, s.completed_age })
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

-- The reply row of schedule `name` (as schedule_of read it) whose next run is `run`.
local function schedule_row(name, config, run)
  return { name, run, config.every, config.offset, config.cron, config.tz, config.catch_up, config.priority,
    config.group ~= '' and config.group or false, config.payload }
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
