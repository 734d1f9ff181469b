#!lua flags=no-writes
--- Reads a job's result, while it is kept.
---
--- Beyond the books (BullMQ's `returnvalue`, Celery's result backend). A result is kept
--- only when the worker's ack gives one (`ack.lua`, `take.lua`), for the queue's
--- `result_ttl` (see `configure.lua`); one whose time has passed reads as none, and the
--- next `take` or kept result drops it.
--- @key results hash {<name>}:results  job id -> its result, while it is kept
--- @key kept zset {<name>}:kept        job id -> until when its result is kept (ms, server clock)
--- @arg id string non-empty      the job's id
--- @return bytes?                the result; nil when none is kept
--- @error BAD_ARGS               not 2 keys and 1 argument
--- @error BAD_ID                 empty
--- @error BAD_KEYS               a key not named as its template says
--- @error BAD_KEPT               `kept` holds a time that is not whole ms (a foreign one)
--- @uses safe_integer shown
--- @clock server
--- @complexity O(1)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local results = KEYS[1]
local kept = KEYS[2]
local id = ARGV[1]
if id == '' then
  return redis.error_reply('BAD_ID must not be empty')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(results, '^(.+):results$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:results, got ' .. shown(results))
end
if kept ~= tag_of_keys .. ':kept' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:kept with <name> as in results, got ' .. shown(kept))
end
-- End of the generated input checks.
redis.call('HLEN', results)
local until_ms = redis.call('ZSCORE', kept, id)
if not until_ms then
  return false
end
if not safe_integer(until_ms, 0, 999999999999999) then
  return redis.error_reply('BAD_KEPT the result of job ' .. shown(id) .. ' is kept until ' .. shown(until_ms)
    .. ', not whole ms from 0 to 10^15 - 1')
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if tonumber(until_ms) <= now then
  return false
end
return redis.call('HGET', results, id)
