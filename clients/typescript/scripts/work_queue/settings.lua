#!lua flags=no-writes
--- Reads the queue's settings: limits, dead and completed jobs kept, metrics window, events, results.
---
--- Beyond the books, for operators. The defaults where `configure.lua` never ran: no
--- limits (0), periods of 1000 ms, 10,000 dead jobs kept for 180 days, no metrics (0), no
--- events (0), results kept for an hour and up to 16 KiB, no group turns (0), no completed
--- jobs kept (0; for 7 days once some are).
--- @key jobs hash {<name>}:jobs        <x>:<id>: the jobs' fields; #settings the queue's settings
--- @return [int]                 the fifteen settings as `configure.lua` takes them, in its order
--- @error BAD_ARGS               not 1 key and 0 arguments
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_JOBS               `jobs` holds settings these scripts did not write
--- @uses settings_of
--- @complexity O(1)
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 1 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 1 key and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local jobs = KEYS[1]
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(jobs, '^(.+):jobs$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:jobs, got ' .. shown(jobs))
end
-- End of the generated input checks.
local settings, bad = settings_of(redis.call('HGET', jobs, '#settings'))
if bad then
  return bad
end
return { settings.group_concurrency, settings.group_rate, settings.group_period, settings.queue_concurrency,
  settings.queue_rate, settings.queue_period, settings.dead_max, settings.dead_age, settings.metrics_minutes,
  settings.events_max, settings.result_ttl, settings.result_max, settings.group_turns, settings.completed_max,
  settings.completed_age }
