--- Adds a flow: a parent job that waits until each of its children (jobs of this queue) has ended.
---
--- Beyond the books (BullMQ's `FlowProducer`, Sidekiq Pro's batches, Celery's chords),
--- added in one call: all of it or, when the parent's id is in the queue already,
--- nothing (as `add.lua` deduplicates). The children wait at once, with the parent's
--- priority and no group; the parent is `blocked` (listed in `blocked` by when it was
--- added; a parent added before this set was kept is in no list) until its last child
--- ends, then waits at its own rank, as if added then. Each child says what its failure
--- (dead: `nack.lua`, a lease that ran out on its last delivery) does to the parent:
--- `fail` takes the parent to `dead` with it (its other children run on), `ignore`
--- counts as ended, `continue` counts as ended and lists the child among the parent's
--- failed children (`job.lua`), for the parent's worker to read. A child
--- names its parent in `jobs` (P:<child>, the policy's first letter then the parent's
--- id); the parent counts its children still running (w:<parent>) and lists the failed
--- ones (x:<parent>, `<length>:<id>` each). Removing a child (`remove.lua`) leaves its
--- parent waiting for it: remove the parent too. Children in another queue of the same
--- slot, or in another slot, are the app's to join: wait for each (`events.lua`), then
--- add the parent. A flow has at most 50 children, so that one call stays short; more
--- children are the app's to join in the same way.
--- @key waiting zset {<name>}:waiting  job id -> rank: (255 - priority) × 10^13 + 5 × 10^12 ± arrival (- if LIFO)
--- @key delayed zset {<name>}:delayed  job id -> when it becomes waiting (ms, server clock)
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @key signal zset {<name>}:signal    one member while a job may be ready: workers wait on it with BZPOPMIN
--- @key blocked zset {<name>}:blocked  flow parent id -> when it was added (ms, server clock), while blocked
--- @arg id string non-empty      the parent's id
--- @arg payload bytes            the parent's data
--- @arg priority uint 0..=255    the priority of the parent and its children
--- @arg group string             the parent's group; '' for none
--- @arg trace string len:0..=1024  the producer's W3C trace context, for the parent and each child; '' for none
--- @arg children bytes... 3..=150  id, payload, on failure (fail|ignore|continue), …: from 1 to 50 children
--- @return (bool, string)        added, and the parent's state: 'blocked', or that of the job already there
--- @error BAD_ARGS               not 5 keys and from 8 to 155 arguments
--- @error BAD_ID                 empty
--- @error BAD_PRIORITY           not an integer within its range
--- @error BAD_TRACE              not from 0 to 1024 bytes long
--- @error BAD_CHILDREN           not id, payload, policy triples, an empty id, or a policy not fail, ignore or continue
--- @error DUPLICATE              a child's id is in the queue already, or twice in the flow, or is the parent's
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_JOBS               `jobs` holds an arrival counter (#seq) or settings these scripts do not write
--- @uses add_job next_rank settings_of safe_integer shown
--- @default trace ''             none (with the `otel` feature, the span of the call)
--- @clock server
--- @complexity O(C log N), C ≤ 50 the children, N = the jobs
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 5 or #ARGV < 8 or #ARGV > 155 then
  return redis.error_reply('BAD_ARGS expected 5 keys and from 8 to 155 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local delayed = KEYS[2]
local jobs = KEYS[3]
local signal = KEYS[4]
local blocked = KEYS[5]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID must not be empty')
end
local payload = ARGV[2]
local priority = ARGV[3] == '0' and 0 or tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not priority or priority > 255 then
  return redis.error_reply('BAD_PRIORITY must be an integer from 0 to 255, got ' .. shown(ARGV[3]))
end
local group = ARGV[4]
local trace = ARGV[5]
if #trace < 0 or #trace > 1024 then
  return redis.error_reply('BAD_TRACE must be from 0 to 1024 bytes long, got ' .. #trace .. ' bytes')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(waiting, '^(.+):waiting$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:waiting, got ' .. shown(waiting))
end
if delayed ~= tag_of_keys .. ':delayed' or jobs ~= tag_of_keys .. ':jobs' or signal ~= tag_of_keys .. ':signal' or
    blocked ~= tag_of_keys .. ':blocked' then
  for i, each in ipairs({ ':delayed', ':jobs', ':signal', ':blocked' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in waiting, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
for _, zset in ipairs({ waiting, delayed, signal, blocked }) do
  redis.call('ZCARD', zset)
end
local existing, last_seq, stored_settings = unpack(redis.call('HMGET', jobs, 's:' .. id, '#seq', '#settings'))
if existing then
  return { 0, existing }
end
if last_seq and not safe_integer(last_seq, 0, 9999999999999) then
  return redis.error_reply('BAD_JOBS the arrival counter #seq is ' .. shown(last_seq))
end
local settings, bad_settings = settings_of(stored_settings)
if not settings then
  return bad_settings
end
local children = { unpack(ARGV, 6) }
local policies = { fail = 'f', ignore = 'i', continue = 'c' }
local seen = { [id] = true }
if #children % 3 ~= 0 then
  return redis.error_reply('BAD_CHILDREN children must be id, payload, policy triples; got ' .. #children
    .. ' values')
end
for i = 1, #children, 3 do
  local child, policy = children[i], children[i + 2]
  if child == '' or not policies[policy] then
    return redis.error_reply('BAD_CHILDREN child ' .. shown(child) .. ' has the policy ' .. shown(policy)
      .. '; ids must not be empty, and policies are fail, ignore or continue')
  end
  if seen[child] or redis.call('HEXISTS', jobs, 's:' .. child) == 1 then
    return redis.error_reply('DUPLICATE job ' .. shown(child) .. ' is in the queue or the flow already')
  end
  seen[child] = true
end
-- Every child is added as add.lua adds a job (its checks, the settings', pass or fail on
-- the first, before anything is written), then names its parent.
for i = 1, #children, 3 do
  local added, bad = add_job(waiting, delayed, jobs, signal, children[i], children[i + 1], priority, 0, '', settings,
    false, false, trace)
  if not added then
    return bad
  end
  redis.call('HSET', jobs, 'P:' .. children[i], policies[children[i + 2]] .. id)
end
local fields = { 'd:' .. id, payload, 's:' .. id, 'blocked', 'r:' .. id, next_rank(jobs, priority), 'n:' .. id, 0,
  'w:' .. id, #children / 3 }
if group ~= '' then
  fields[#fields + 1], fields[#fields + 2] = 'g:' .. id, group
end
if trace ~= '' then
  fields[#fields + 1], fields[#fields + 2] = 'c:' .. id, trace
end
redis.call('HSET', jobs, unpack(fields))
local time = redis.call('TIME')
redis.call('ZADD', blocked, string.format('%d', tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)), id)
return { 1, 'blocked' }
