#!lua flags=no-writes
--- Reads the queue's settings: limits, dead-letter cap, metrics window, events and results.
---
--- Beyond the books, for operators. The defaults where `configure.lua` never ran: no
--- limits (0), periods of 1000 ms, 10,000 dead jobs kept for 180 days, no metrics (0), no
--- events (0), results kept for an hour and up to 16 KiB, no group turns (0).
--- @key jobs hash {<name>}:jobs        <x>:<id>: the jobs' fields; #settings the queue's settings
--- @return [int]                 the thirteen settings as `configure.lua` takes them, in its order
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
-- The queue's settings from `stored`, the field #settings of the jobs hash as the caller
-- read it (with the other fields it reads there, to save a call): false for the defaults
-- (configure.lua never ran); the form packed_settings writes; or the text earlier
-- versions wrote, thirteen whole numbers (or the first twelve or nine), which
-- configure.lua rewrites in the new form. Nil and a BAD_JOBS error reply for a value
-- configure.lua does not write.
local function settings_of(stored)
  local v = { 0, 0, 1000, 0, 0, 1000, 10000, 15552000000, 0, 0, 3600000, 16384, 0 }
  if stored then
    local found = {}
    if string.find(stored, '^%d') then
      -- One pattern match (in C) for the whole text; digits only, at most 16 of them:
      -- exact in a Lua number.
      local nine = '^(%d+) (%d+) (%d+) (%d+) (%d+) (%d+) (%d+) (%d+) (%d+)'
      found = { string.match(stored, nine .. ' (%d+) (%d+) (%d+) (%d+)$') }
      if #found == 0 then
        found = { string.match(stored, nine .. ' (%d+) (%d+) (%d+)$') }
      end
      if #found == 0 then
        found = { string.match(stored, nine .. '$') }
      end
      for i = 1, #found do
        found[i] = #found[i] <= 16 and tonumber(found[i])
      end
    else
      -- One object, the whole value (unpack_one answers -1 for the offset after it).
      local ok, after, packed = pcall(cmsgpack.unpack_one, stored)
      if ok and after == -1 and type(packed) == 'table' and packed[1] == 2 and #packed == 14 then
        for i = 1, 13 do
          found[i] = packed[i + 1]
        end
      end
    end
    local low = { 0, 0, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0 }
    local high = { 1000000, 1000, 10000000000, 1000000, 1000, 10000000000, 10000000, 1000000000000, 1440, 100000,
      2592000000, 16384, 1 }
    for i = 1, #found do
      local n = found[i]
      if not (type(n) == 'number' and n >= low[i] and n <= high[i] and n % 1 == 0) then
        found = {}
        break
      end
      v[i] = n
    end
    if #found == 0 then
      return nil, redis.error_reply('BAD_JOBS the settings #settings are ' .. shown(stored)
        .. ', not what configure.lua writes')
    end
  end
  return {
    group_concurrency = v[1], group_rate = v[2], group_period = v[3],
    queue_concurrency = v[4], queue_rate = v[5], queue_period = v[6],
    dead_max = v[7], dead_age = v[8], metrics_minutes = v[9],
    events_max = v[10], result_ttl = v[11], result_max = v[12], group_turns = v[13],
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
  settings.events_max, settings.result_ttl, settings.result_max, settings.group_turns }
