--- Claims up to `limit` rows that are due: each is rescheduled `delay` from now, so no other worker gets it until then.
---
--- Redis in Action chapter 2 (`cache_rows`). The book's worker reads the first row due,
--- then reads its delay, then reschedules it, in three round trips without a lock: two
--- workers that read at once both cache the row, and a row scheduled without a delay
--- (ZSCORE answers nil) crashes every worker with a TypeError. Here claiming is one step:
--- each due row goes to exactly one worker per due time. A due row without a positive
--- delay (written by something other than schedule.lua) is unscheduled and reported as
--- dropped, so the worker can delete its cached copy.
--- @key delays zset {<namespace>}:delays      row id -> delay between two copies (ms)
--- @key schedule zset {<namespace>}:schedule  row id -> when its next copy is due (ms, server clock)
--- @arg limit uint 1..=500    the most rows to claim or drop
--- @return ([(string, uint)], [string])  the rows claimed, each with the due time it was claimed for
---                            (ms, server clock), and the rows dropped
--- @error BAD_ARGS            not 2 keys and 1 argument
--- @error BAD_LIMIT           not an integer within its range
--- @error BAD_KEYS            a key not named as its template says
--- @clock server
--- @complexity O(M log N), M = rows due (at most `limit`), N = the rows scheduled
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
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local delays = KEYS[1]
local schedule = KEYS[2]
local limit = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not limit or limit > 500 then
  return redis.error_reply('BAD_LIMIT must be an integer from 1 to 500, got ' .. shown(ARGV[1]))
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
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', delays)
redis.call('ZCARD', schedule)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', schedule, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
local claimed, dropped = {}, {}
for i = 1, #due, 2 do
  local row = due[i]
  local every = tonumber(redis.call('ZSCORE', delays, row))
  if every and every > 0 then
    redis.call('ZADD', schedule, now + every, row)
    -- The due time is at most now: an integer reply (written elsewhere, cut to whole ms from 0).
    claimed[#claimed + 1] = { row, math.max(0, math.floor(tonumber(due[i + 1]))) }
  else
    redis.call('ZREM', schedule, row)
    redis.call('ZREM', delays, row)
    dropped[#dropped + 1] = row
  end
end
return { claimed, dropped }
