#!lua flags=no-writes
--- Reads the queue's metrics: its counts, its totals, jobs ended per minute, and the age of the next job.
---
--- Beyond the books (BullMQ's `getMetrics` and `getJobCounts` in one call). The scripts
--- that end jobs count them as they do, at no extra round trip: `ack.lua` and `take.lua`'s
--- acks as completed, `nack.lua` and leases that ran out as failed deliveries (a job
--- retried three times fails three deliveries), those of them that went to the
--- dead-letter queue as dead. Per minute of the server's clock they are kept for the
--- window `configure.lua` sets (none until it sets one, and none when it is 0: then the
--- totals stand still too, and the window answered is 0). The age is that of the job next
--- in line, from when it was first ready (its add, or the end of its delay): the head of
--- `waiting` and, while groups take turns, the first job of the group whose turn comes
--- first in `turns` (the older of the two when both wait); nil when no job waits, or for a
--- job that `add.lua` did not stamp (one added before it stamped every job).
--- @key waiting zset {<name>}:waiting  job id -> rank: (255 - priority) × 10^13 + 5 × 10^12 ± arrival (- if LIFO)
--- @key delayed zset {<name>}:delayed  job id -> when it becomes waiting (ms, server clock)
--- @key leased zset {<name>}:leased    job id -> lease deadline (ms, server clock)
--- @key dead zset {<name>}:dead        job id -> when it died (ms, server clock): the dead-letter queue
--- @key parked zset {<name>}:parked    held-back jobs of groups at their limit, all at score 0 (see take.lua)
--- @key jobs hash {<name>}:jobs        <x>:<id>: d payload, s state, r rank, n deliveries, g group, t token, e error
--- @key turns zset {<name>}:turns      group ('' for none) -> its turn, while groups take turns (see take.lua)
--- @key completed zset {<name>}:completed  job id -> when it completed (ms, server clock), while kept
--- @key blocked zset {<name>}:blocked  flow parent id -> when it was added (ms, server clock), while blocked
--- @arg minutes uint 1..=1440    how many of the last minutes to return, at most the window kept
--- @return ([int], uint, uint, uint, uint?, uint, [(uint, uint, uint)]) counts, totals, age, window, rows:
---   the jobs waiting, parked, delayed, leased, dead, completed (kept) and blocked; completed jobs,
---   failed deliveries and dead jobs in all; the next job's age in ms; the minutes of
---   metrics kept (0: metrics are off); a row per minute, newest first: minute (Unix ms /
---   60,000), completed jobs, failed deliveries
--- @error BAD_ARGS               not 9 keys and 1 argument
--- @error BAD_MINUTES            not an integer within its range
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_JOBS               `jobs` holds settings or metrics these scripts did not write
--- @error BAD_PARKED             `parked` holds a member that take.lua did not write
--- @error BAD_TURNS              `turns` holds a score that is no turn number
--- @uses settings_of metrics_at slot_counts parked_of turn_number safe_integer
--- @clock server
--- @complexity O(M + log N), M = `minutes`, N = the jobs
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 9 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 9 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local waiting = KEYS[1]
local delayed = KEYS[2]
local leased = KEYS[3]
local dead = KEYS[4]
local parked = KEYS[5]
local jobs = KEYS[6]
local turns = KEYS[7]
local completed = KEYS[8]
local blocked = KEYS[9]
local minutes = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not minutes or minutes > 1440 then
  return redis.error_reply('BAD_MINUTES must be an integer from 1 to 1440, got ' .. shown(ARGV[1]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(waiting, '^(.+):waiting$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:waiting, got ' .. shown(waiting))
end
if delayed ~= tag_of_keys .. ':delayed' or leased ~= tag_of_keys .. ':leased' or dead ~= tag_of_keys .. ':dead' or
    parked ~= tag_of_keys .. ':parked' or jobs ~= tag_of_keys .. ':jobs' or turns ~= tag_of_keys .. ':turns' or
    completed ~= tag_of_keys .. ':completed' or blocked ~= tag_of_keys .. ':blocked' then
  for i, each in ipairs({ ':delayed', ':leased', ':dead', ':parked', ':jobs', ':turns', ':completed', ':blocked' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in waiting, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
local settings, bad = settings_of(redis.call('HGET', jobs, '#settings'))
if bad then
  return bad
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local in_states = {}
for i, zset in ipairs({ waiting, parked, delayed, leased, dead, completed, blocked }) do
  in_states[i] = redis.call('ZCARD', zset)
end
local reply = { in_states }
local kept = math.min(minutes, settings.metrics_minutes)
local current, bad_metrics = metrics_at(jobs, now, math.max(settings.metrics_minutes, 1))
if not current then
  return bad_metrics
end
for i = 1, 3 do
  reply[1 + i] = current.totals[i]
end
-- The jobs first in line: the head of `waiting`, and the first job of the group whose
-- turn comes first (parked in its group's range while groups take turns).
local heads = { redis.call('ZRANGE', waiting, 0, 0)[1] }
local first_turn = redis.call('ZRANGE', turns, 0, 0, 'WITHSCORES')
if first_turn[1] then
  local _, bad_turn = turn_number(turns, first_turn[1], first_turn[2])
  if bad_turn then
    return bad_turn
  end
  local found, bad_parked = parked_of(parked, first_turn[1], 1)
  if not found then
    return bad_parked
  end
  heads[#heads + 1] = found[1] and found[1].id
end
local oldest = false
for _, head in pairs(heads) do
  local ready = redis.call('HGET', jobs, 'a:' .. head)
  ready = ready and safe_integer(ready, 0, 999999999999999)
  if ready and (not oldest or ready < oldest) then
    oldest = ready
  end
end
reply[5] = oldest and math.max(now - oldest, 0)
reply[6] = settings.metrics_minutes

local rows = {}
if kept > 0 then
  -- This minute's slot is the one metrics_at read (the ring is `metrics_minutes` long then);
  -- the earlier minutes' are read here.
  rows[1] = { current.minute, current.slot[1], current.slot[2] }
  local fields, slots = {}, {}
  for i = 1, kept - 1 do
    fields[i] = '#m:' .. ((current.minute - i) % settings.metrics_minutes)
  end
  -- In steps of 1000 fields: Lua unpacks at most about 8000 values into one call.
  for from = 1, kept - 1, 1000 do
    local part = redis.call('HMGET', jobs, unpack(fields, from, math.min(from + 999, kept - 1)))
    for i = 1, #part do
      slots[from + i - 1] = part[i]
    end
  end
  for i = 1, kept - 1 do
    -- A slot of another minute holds an older minute's counts: this one had none.
    local counts, bad_slot = slot_counts(fields[i], slots[i], current.minute - i)
    if not counts then
      return bad_slot
    end
    rows[i + 1] = { current.minute - i, counts[1], counts[2] }
  end
end
reply[7] = rows
return reply
