--- Changes the queue's settings that it is given, and keeps the others.
---
--- Beyond the books, for operators (BullMQ's group concurrency and `setGlobalConcurrency`,
--- its worker `limiter`, its `removeOnComplete` and `removeOnFail`, Sidekiq's dead set
--- caps): the limits, the dead-letter cap, the completed jobs kept, the metrics window,
--- the events cap, the results' bounds and group turns. They live in
--- `jobs` (#settings, a MessagePack array that one call unpacks: see packed_settings) and
--- `take.lua` reads them on every call, so a worker deployed with other code applies the
--- same limits, and a change takes effect on the next `take`. Settings that an earlier
--- version wrote as text are read as before, and written again in the new form here
--- (which earlier versions' scripts refuse with BAD_JOBS: upgrade every app first). An
--- empty argument leaves its setting as it is: the merge happens here, in one call, so
--- two operators who change different settings at the same moment both keep their change.
--- Until this runs the queue has no limits, keeps at most 10,000 dead jobs for at most
--- 180 days, keeps no completed job, and keeps no metrics (they cost the scripts that end
--- jobs two hash commands each). With `completed_max` above 0, a job that ends well
--- stays in `completed` with its record, when it started and finished and its result
--- (see `ack.lua`), at most that many and for at most `completed_age` (7 days unless set);
--- the scripts that end jobs drop the oldest beyond either bound, a few per call, and
--- `take.lua` drops those beyond a lower bound set here, `limit` per call. Settings that
--- keep completed jobs are written in a form that earlier versions' scripts refuse with
--- BAD_JOBS (upgrade every app first); the others, in the form they read. A new queue
--- rate starts its ring of start times anew (the old start times stay, at most 1,000,
--- until a later ring overwrites them or the queue is deleted). A new
--- metrics window keeps the totals and the slots of the minutes it still covers (each
--- slot names its minute, so one of another minute reads as 0); the slots beyond a
--- smaller window stay, at most 1,440, until the queue is deleted.
--- When the group limits change, up to 100 groups with parked jobs are woken, so
--- the next `take` calls start what the new limits allow (the jobs of any further groups
--- start as their groups' jobs end); idle workers are woken too.
--- Events (what happened to each job, in `events`) are off until `events_max` is set; the
--- stream then keeps at most that many, the oldest going first, and a lower cap trims it
--- here. A result (`ack.lua`, `take.lua`) is kept only when a worker gives one: for
--- `result_ttl` (1 hour unless set), and one longer than `result_max` bytes (16 KiB unless
--- set) is refused.
--- `group_turns` 1 makes the groups with jobs ready take turns (BullMQ Pro's round-robin
--- between groups; jobs without a group are one group of their own): `add.lua` parks a new
--- job in its group's range of `parked` and gives its group a turn in `turns`, and
--- `take.lua` takes one job per turn, the group then waiting behind every other (see its
--- header). Switching takes nothing from here: with turns on, each `take` moves up to
--- 2 × `limit` waiting jobs into their groups' turns; with turns off, each `take` hands
--- the jobs of up to `limit` groups with a turn back to `waiting` (up to `limit` jobs), so
--- no job is lost either way, and idle workers are woken to do it.
--- @key parked zset {<name>}:parked    held-back jobs of groups at their limit, all at score 0 (see take.lua)
--- @key jobs hash {<name>}:jobs        <x>:<id>: the jobs' fields; #settings the queue's settings
--- @key wake zset {<name>}:wake        group -> when its rate window lets a parked job start (ms)
--- @key signal zset {<name>}:signal    one member while a job may be ready: workers wait on it with BZPOPMIN
--- @key events stream {<name>}:events  what happened to each job: event, job, and an error or progress
--- @arg group_concurrency uint? 0..=10^6 the most jobs of one group held at once; 0 for no limit
--- @arg group_rate uint? 0..=1000        the most jobs of one group started per `group_period`; 0 for no limit
--- @arg group_period ms? 1..=10^10       the window of `group_rate`
--- @arg queue_concurrency uint? 0..=10^6 the most jobs of the whole queue held at once; 0 for no limit
--- @arg queue_rate uint? 0..=1000        the most jobs of the whole queue started per `queue_period`; 0 for no limit
--- @arg queue_period ms? 1..=10^10       the window of `queue_rate`
--- @arg dead_max uint? 1..=10^7          the most jobs kept dead; the oldest go first
--- @arg dead_age ms? 1..=10^12           how long a dead job is kept
--- @arg metrics_minutes uint? 0..=1440  the minutes of per-minute metrics kept; 0 for no metrics
--- @arg events_max uint? 0..=10^5       the most events `events` keeps; 0 for no events
--- @arg result_ttl ms? 1..=2592000000   how long a job's result is kept (30 days at most)
--- @arg result_max uint? 1..=2^14       the longest result kept, in bytes (16 KiB at most)
--- @arg group_turns uint? 0..=1         1 for groups with jobs ready taking turns (round-robin); 0 for no turns
--- @arg completed_max uint? 0..=10^7     the most completed jobs kept; the oldest go first; 0 for none
--- @arg completed_age ms? 1..=10^12      how long a completed job is kept
--- @return (bool, uint)          whether a setting changed, and how many groups with parked jobs were woken
--- @error BAD_ARGS               not 5 keys and 15 arguments
--- @error BAD_GROUP_CONCURRENCY  not an integer within its range (or empty)
--- @error BAD_GROUP_RATE         not an integer within its range (or empty)
--- @error BAD_GROUP_PERIOD       not whole milliseconds within its range (or empty)
--- @error BAD_QUEUE_CONCURRENCY  not an integer within its range (or empty)
--- @error BAD_QUEUE_RATE         not an integer within its range (or empty)
--- @error BAD_QUEUE_PERIOD       not whole milliseconds within its range (or empty)
--- @error BAD_DEAD_MAX           not an integer within its range (or empty)
--- @error BAD_DEAD_AGE           not whole milliseconds within its range (or empty)
--- @error BAD_METRICS_MINUTES    not an integer within its range (or empty)
--- @error BAD_EVENTS_MAX         not an integer within its range (or empty)
--- @error BAD_RESULT_TTL         not whole milliseconds within its range (or empty)
--- @error BAD_RESULT_MAX         not an integer within its range (or empty)
--- @error BAD_GROUP_TURNS        not an integer within its range (or empty)
--- @error BAD_COMPLETED_MAX      not an integer within its range (or empty)
--- @error BAD_COMPLETED_AGE      not whole milliseconds within its range (or empty)
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_JOBS               `jobs` holds settings these scripts did not write; nothing was written
--- @error BAD_PARKED             `parked` holds a member that take.lua did not write; nothing was written
--- @uses settings_of packed_settings parked_prefix parse_parked wake_workers shown
--- @complexity O(G log N + E): G ≤ 100 groups woken, N parked jobs, E ≤ 10^5 events trimmed
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; work_queue/_shared.lua of the scripts folder).
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
-- Tells workers blocked on `signal_key` (BZPOPMIN) that a job may be ready: the key holds
-- at most one member, so it stays one member however many jobs wait.
local function wake_workers(signal_key)
  redis.call('ZADD', signal_key, '0', 'ready')
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 5 or #ARGV ~= 15 then
  return redis.error_reply('BAD_ARGS expected 5 keys and 15 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local parked = KEYS[1]
local jobs = KEYS[2]
local wake = KEYS[3]
local signal = KEYS[4]
local events = KEYS[5]
local group_concurrency = ARGV[1] == '0' and 0 or tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if ARGV[1] ~= '' and (not group_concurrency or group_concurrency > 1000000) then
  return redis.error_reply(
      'BAD_GROUP_CONCURRENCY must be an integer from 0 to 1000000, or empty, got ' .. shown(ARGV[1]))
end
local group_rate = ARGV[2] == '0' and 0 or tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if ARGV[2] ~= '' and (not group_rate or group_rate > 1000) then
  return redis.error_reply('BAD_GROUP_RATE must be an integer from 0 to 1000, or empty, got ' .. shown(ARGV[2]))
end
local group_period = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if ARGV[3] ~= '' and (not group_period or group_period > 10000000000) then
  return redis.error_reply(
      'BAD_GROUP_PERIOD must be whole milliseconds from 1 to 10000000000, or empty, got ' .. shown(ARGV[3]))
end
local queue_concurrency = ARGV[4] == '0' and 0 or tonumber(string.match(ARGV[4], '^[1-9]%d*$'))
if ARGV[4] ~= '' and (not queue_concurrency or queue_concurrency > 1000000) then
  return redis.error_reply(
      'BAD_QUEUE_CONCURRENCY must be an integer from 0 to 1000000, or empty, got ' .. shown(ARGV[4]))
end
local queue_rate = ARGV[5] == '0' and 0 or tonumber(string.match(ARGV[5], '^[1-9]%d*$'))
if ARGV[5] ~= '' and (not queue_rate or queue_rate > 1000) then
  return redis.error_reply('BAD_QUEUE_RATE must be an integer from 0 to 1000, or empty, got ' .. shown(ARGV[5]))
end
local queue_period = tonumber(string.match(ARGV[6], '^[1-9]%d*$'))
if ARGV[6] ~= '' and (not queue_period or queue_period > 10000000000) then
  return redis.error_reply(
      'BAD_QUEUE_PERIOD must be whole milliseconds from 1 to 10000000000, or empty, got ' .. shown(ARGV[6]))
end
local dead_max = tonumber(string.match(ARGV[7], '^[1-9]%d*$'))
if ARGV[7] ~= '' and (not dead_max or dead_max > 10000000) then
  return redis.error_reply('BAD_DEAD_MAX must be an integer from 1 to 10000000, or empty, got ' .. shown(ARGV[7]))
end
local dead_age = tonumber(string.match(ARGV[8], '^[1-9]%d*$'))
if ARGV[8] ~= '' and (not dead_age or dead_age > 1000000000000) then
  return redis.error_reply(
      'BAD_DEAD_AGE must be whole milliseconds from 1 to 1000000000000, or empty, got ' .. shown(ARGV[8]))
end
local metrics_minutes = ARGV[9] == '0' and 0 or tonumber(string.match(ARGV[9], '^[1-9]%d*$'))
if ARGV[9] ~= '' and (not metrics_minutes or metrics_minutes > 1440) then
  return redis.error_reply('BAD_METRICS_MINUTES must be an integer from 0 to 1440, or empty, got ' .. shown(ARGV[9]))
end
local events_max = ARGV[10] == '0' and 0 or tonumber(string.match(ARGV[10], '^[1-9]%d*$'))
if ARGV[10] ~= '' and (not events_max or events_max > 100000) then
  return redis.error_reply('BAD_EVENTS_MAX must be an integer from 0 to 100000, or empty, got ' .. shown(ARGV[10]))
end
local result_ttl = tonumber(string.match(ARGV[11], '^[1-9]%d*$'))
if ARGV[11] ~= '' and (not result_ttl or result_ttl > 2592000000) then
  return redis.error_reply(
      'BAD_RESULT_TTL must be whole milliseconds from 1 to 2592000000, or empty, got ' .. shown(ARGV[11]))
end
local result_max = tonumber(string.match(ARGV[12], '^[1-9]%d*$'))
if ARGV[12] ~= '' and (not result_max or result_max > 16384) then
  return redis.error_reply('BAD_RESULT_MAX must be an integer from 1 to 16384, or empty, got ' .. shown(ARGV[12]))
end
local group_turns = ARGV[13] == '0' and 0 or tonumber(string.match(ARGV[13], '^[1-9]%d*$'))
if ARGV[13] ~= '' and (not group_turns or group_turns > 1) then
  return redis.error_reply('BAD_GROUP_TURNS must be an integer from 0 to 1, or empty, got ' .. shown(ARGV[13]))
end
local completed_max = ARGV[14] == '0' and 0 or tonumber(string.match(ARGV[14], '^[1-9]%d*$'))
if ARGV[14] ~= '' and (not completed_max or completed_max > 10000000) then
  return redis.error_reply('BAD_COMPLETED_MAX must be an integer from 0 to 10000000, or empty, got ' .. shown(ARGV[14]))
end
local completed_age = tonumber(string.match(ARGV[15], '^[1-9]%d*$'))
if ARGV[15] ~= '' and (not completed_age or completed_age > 1000000000000) then
  return redis.error_reply(
      'BAD_COMPLETED_AGE must be whole milliseconds from 1 to 1000000000000, or empty, got ' .. shown(ARGV[15]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(parked, '^(.+):parked$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:parked, got ' .. shown(parked))
end
if jobs ~= tag_of_keys .. ':jobs' or wake ~= tag_of_keys .. ':wake' or signal ~= tag_of_keys .. ':signal' or
    events ~= tag_of_keys .. ':events' then
  for i, each in ipairs({ ':jobs', ':wake', ':signal', ':events' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in parked, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (`jobs` is read first).
for _, zset in ipairs({ parked, wake, signal }) do
  redis.call('ZCARD', zset)
end
redis.call('XLEN', events)
local stored = redis.call('HGET', jobs, '#settings')
local old, bad = settings_of(stored)
if bad then
  return bad
end
-- The settings this call names over those the queue has: an empty argument (nil here)
-- keeps its setting.
local given = {
  group_concurrency = group_concurrency, group_rate = group_rate, group_period = group_period,
  queue_concurrency = queue_concurrency, queue_rate = queue_rate, queue_period = queue_period,
  dead_max = dead_max, dead_age = dead_age, metrics_minutes = metrics_minutes,
  events_max = events_max, result_ttl = result_ttl, result_max = result_max, group_turns = group_turns,
  completed_max = completed_max, completed_age = completed_age,
}
local new = {}
local changed = false
for name, value in pairs(old) do
  if given[name] == nil then
    new[name] = value
  else
    new[name] = given[name]
  end
  changed = changed or new[name] ~= value
end

-- The groups with parked jobs, one lexicographic range each (parked_prefix), read first:
-- a member take.lua did not write is refused before anything is written.
local woken = {}
if old.group_concurrency ~= new.group_concurrency or old.group_rate ~= new.group_rate
    or old.group_period ~= new.group_period then
  local from = '-'
  while #woken < 100 do
    local member = redis.call('ZRANGE', parked, from, '+', 'BYLEX', 'LIMIT', 0, 1)[1]
    if not member then
      break
    end
    local group = parse_parked(member)
    if not group then
      return redis.error_reply('BAD_PARKED parked holds ' .. shown(member) .. ', not a parked job')
    end
    woken[#woken + 1] = group
    -- Past every member of this group: its prefix followed by a rank's digits, all below ':'.
    from = '[' .. parked_prefix(group) .. ':'
  end
end

-- Settings that an earlier version wrote as text are written again in the form that every
-- script reads in one step.
if changed or (stored and string.find(stored, '^%d')) then
  if old.queue_rate ~= new.queue_rate then
    -- The ring starts anew from its first slot: take.lua writes each slot before it reads
    -- it again, so the old start times (#qs:<i>) are never read, and stay until overwritten.
    redis.call('HDEL', jobs, '#qn')
  end
  redis.call('HSET', jobs, '#settings', packed_settings(new))
  if new.events_max > 0 and new.events_max < old.events_max then
    redis.call('XTRIM', events, 'MAXLEN', new.events_max)
  end
end
for _, group in ipairs(woken) do
  redis.call('ZADD', wake, 0, group)
end
wake_workers(signal)
return { changed and 1 or 0, #woken }
