--- Moves a job from the dead-letter queue back to waiting, with its delivery count reset.
---
--- Beyond the books. The job keeps its id, payload, priority and group, and its last
--- error until it fails again; it goes behind the jobs already waiting at its priority.
--- A job that is not dead is left alone.
--- @key waiting zset {<name>}:waiting  job id -> rank: (255 - priority) × 10^13 + 5 × 10^12 ± arrival (- if LIFO)
--- @key dead zset {<name>}:dead        job id -> when it died (ms, server clock): the dead-letter queue
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @key signal zset {<name>}:signal    one member while a job may be ready: workers wait on it with BZPOPMIN
--- @key events stream {<name>}:events  what happened to each job: event, job, and an error or progress
--- @arg id string non-empty      the job's id
--- @return bool                  whether the job was dead and is now waiting
--- @error BAD_ARGS               not 5 keys and 1 argument
--- @error BAD_ID                 empty
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_JOBS               `jobs` holds a field of the job these scripts did not write; nothing was written
--- @uses wake_workers next_rank settings_of emit safe_integer shown
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
if #KEYS ~= 5 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 5 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local dead = KEYS[2]
local jobs = KEYS[3]
local signal = KEYS[4]
local events = KEYS[5]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID must not be empty')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(waiting, '^(.+):waiting$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:waiting, got ' .. shown(waiting))
end
if dead ~= tag_of_keys .. ':dead' or jobs ~= tag_of_keys .. ':jobs' or signal ~= tag_of_keys .. ':signal' or
    events ~= tag_of_keys .. ':events' then
  for i, each in ipairs({ ':dead', ':jobs', ':signal', ':events' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in waiting, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`jobs` is read first).
for _, zset in ipairs({ waiting, dead, signal }) do
  redis.call('ZCARD', zset)
end
redis.call('XLEN', events)
if redis.call('HGET', jobs, 's:' .. id) ~= 'dead' then
  return 0
end
-- Everything that can be refused is read before the first write.
local old_rank, last_seq, stored_settings = unpack(redis.call('HMGET', jobs, 'r:' .. id, '#seq', '#settings'))
if not (old_rank and safe_integer(old_rank, 1, 2559999999999999)) then
  return redis.error_reply('BAD_JOBS job ' .. shown(id) .. ' has the rank ' .. shown(old_rank or ''))
end
if last_seq and not safe_integer(last_seq, 0, 9999999999999) then
  return redis.error_reply('BAD_JOBS the arrival counter #seq is ' .. shown(last_seq))
end
local settings, bad = settings_of(stored_settings)
if bad then
  return bad
end
local priority = 255 - math.floor(tonumber(old_rank) / 10000000000000)
local rank = next_rank(jobs, priority)
redis.call('ZREM', dead, id)
redis.call('ZADD', waiting, rank, id)
redis.call('HSET', jobs, 's:' .. id, 'waiting', 'r:' .. id, rank, 'n:' .. id, 0)
emit(events, settings.events_max, 'retried', id)
wake_workers(signal)
return 1
