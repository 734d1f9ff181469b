--- Schedules a row to be cached now and again every `delay`, or, with a delay of 0, stops caching it at once.
---
--- Redis in Action chapter 2 (`schedule_row_cache`): the row's delay and its next due
--- time, written together (the book's two commands in two round trips). Scheduling a row
--- again makes it due now with the new delay. A delay of 0 unschedules the row and
--- deletes its cached copy in the same step; the book instead leaves a delay of 0 for a
--- worker to find, and its workers crash on a row with no delay at all.
--- @key delays zset {<namespace>}:delays      row id -> delay between two copies (ms)
--- @key schedule zset {<namespace>}:schedule  row id -> when its next copy is due (ms, server clock)
--- @key copy string {<namespace>}:inv:<row>   the row's cached copy, deleted when the row is unscheduled
--- @arg row string non-empty  the row id
--- @arg delay ms 0..=10^15-1  how often to cache the row again; 0 to stop caching it
--- @return int                when the row is next due (ms, server clock); 0 when unscheduled
--- @error BAD_ARGS            not 3 keys and 2 arguments
--- @error BAD_ROW             empty
--- @error BAD_DELAY           not whole milliseconds within its range
--- @error BAD_KEYS            a key not named as its template says
--- @clock server
--- @complexity O(log N), N = the rows scheduled
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen).
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
if #KEYS ~= 3 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local delays = KEYS[1]
local schedule = KEYS[2]
local copy = KEYS[3]
local row = ARGV[1]
if row == '' then
  return redis.error_reply('BAD_ROW must not be empty')
end
local delay = ARGV[2] == '0' and 0 or tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not delay or delay > 999999999999999 then
  return redis.error_reply('BAD_DELAY must be whole milliseconds from 0 to 999999999999999, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(delays, '^(.+):delays$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<namespace>}:delays, got ' .. shown(delays))
end
if schedule ~= tag_of_keys .. ':schedule' then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<namespace>}:schedule with <namespace> as in delays, got ' .. shown(schedule))
end
if copy ~= tag_of_keys .. ':inv:' .. row then
  return redis.error_reply(
      'BAD_KEYS KEYS[3] must be {<namespace>}:inv:<row> with <namespace> as in delays and <row> = ARGV[1], got ' ..
      shown(copy))
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', delays)
redis.call('ZCARD', schedule)
redis.call('STRLEN', copy)
if delay == 0 then
  redis.call('ZREM', delays, row)
  redis.call('ZREM', schedule, row)
  redis.call('DEL', copy)
  return 0
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZADD', delays, delay, row)
redis.call('ZADD', schedule, now, row)
return now
