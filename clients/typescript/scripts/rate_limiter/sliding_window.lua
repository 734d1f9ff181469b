--- Admits `cost` requests if the last `period` holds room for them: an exact sliding window.
---
--- Beyond the book. The log is a sorted set with one entry per admitted call, scored by
--- the server's clock in microseconds. Each entry's member is `<before>:<cost>`, where
--- `before` (16 digits, zero-padded) counts the units admitted ahead of it while the key
--- lived, so the units in the window
--- are the newest entry's `before + cost` minus the oldest in-window entry's `before`,
--- found with two O(log N) reads whatever `cost` is. A call is admitted (all `cost`
--- units, or none) when they fit under `limit`; no span of `period` ever holds more than
--- `limit` admitted units, at any alignment. An admitted call removes up to 100 entries
--- that left the window; a refused one writes nothing. If the clock steps back, time is
--- taken as the newest entry's. The key expires when its newest entry leaves the window,
--- so an idle client costs nothing. Memory is one entry per admitted call in the window.
--- Remaining counts the units still admitted now; retry-after is the time until `cost`
--- would be admitted, and reset-after the time until the window is empty.
--- @key log zset <prefix>:<uid>:<action>  the sorted set of admitted calls
--- @arg limit uint 1..=10^6     units admitted in any span of `period`
--- @arg period ms 1..=10^10     the window's length
--- @arg cost uint 1..=10^6      units this call stands for, at most `limit`
--- @return (bool, int, int, int)  allowed, remaining, retry-after µs (-1 when allowed), reset-after µs
--- @error BAD_ARGS              not 1 key and 3 arguments
--- @error BAD_LIMIT             not an integer within its range
--- @error BAD_PERIOD            not whole milliseconds within its range
--- @error BAD_COST              not an integer within its range, or more than `limit`
--- @error BAD_KEYS              a key not named as its template says
--- @error BAD_LOG               the sorted set holds an entry this script did not write; nothing was written
--- @uses safe_integer shown
--- @default prefix SlidingWindowLimiter   the keys of SlidingWindowLimiter::new: SlidingWindowLimiter:<uid>:<action>
--- @clock server
--- @complexity O(log N × log L), N = entries in the log, L = `limit`; O(log N) when admitted
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
if #KEYS ~= 1 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 1 key and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local log = KEYS[1]
local limit = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not limit or limit > 1000000 then
  return redis.error_reply('BAD_LIMIT must be an integer from 1 to 1000000, got ' .. shown(ARGV[1]))
end
local period = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not period or period > 10000000000 then
  return redis.error_reply('BAD_PERIOD must be whole milliseconds from 1 to 10000000000, got ' .. shown(ARGV[2]))
end
local cost = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not cost or cost > 1000000 then
  return redis.error_reply('BAD_COST must be an integer from 1 to 1000000, got ' .. shown(ARGV[3]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
if not string.find(log, '^.+:.+:.+$') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <prefix>:<uid>:<action>, got ' .. shown(log))
end
-- End of the generated input checks.
if cost > limit then
  return redis.error_reply('BAD_COST cost must be an integer from 1 to limit (' .. limit .. '), got ' .. cost)
end

-- `<before>:<cost>` of one entry, as numbers.
local function entry(member)
  -- `before` has exactly 16 digits, zero-padded; `units` is in the one form of integers.
  local before, units = string.match(member or '', '^(' .. string.rep('%d', 16) .. '):(%d+)$')
  if not (before and safe_integer(units, 1, 1000000)) then
    return nil
  end
  return tonumber(before), tonumber(units)
end
local function bad_log(member)
  return redis.error_reply('BAD_LOG the log holds the member ' .. shown(member) .. ', not <before>:<cost>')
end

local span = period * 1000
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local newest = redis.call('ZRANGE', log, 0, 0, 'REV', 'WITHSCORES')
local total = 0
if newest[1] then
  local before, units = entry(newest[1])
  if not before then
    return bad_log(newest[1])
  end
  -- Scored with the time it was admitted: whole microseconds.
  if not safe_integer(newest[2], 0, 9007199254740991) then
    return redis.error_reply('BAD_LOG the log holds ' .. shown(newest[1]) .. ' at ' .. shown(newest[2])
      .. ', not a time in whole microseconds')
  end
  total = before + units
  if tonumber(newest[2]) > now then
    now = tonumber(newest[2])
  end
end

-- Scores go to Redis as whole digits: Lua would print 1.7e15 with 14 significant digits.
local edge = string.format('%.0f', now - span)
-- The window is (now - span, now]: an entry scored now - span has just left it.
local stale = redis.call('ZCOUNT', log, '-inf', edge)
local oldest = redis.call('ZRANGE', log, stale, stale, 'WITHSCORES')
local used = 0
if oldest[1] then
  local before = entry(oldest[1])
  if not before then
    return bad_log(oldest[1])
  end
  used = total - before
end

if used + cost <= limit then
  if stale > 0 then
    redis.call('ZREMRANGEBYRANK', log, 0, math.min(stale, 100) - 1)
  end
  -- `before` zero-padded to 16 digits (2^53 has 16), so that entries of one microsecond
  -- sort by it, as ranks do.
  redis.call('ZADD', log, string.format('%.0f', now), string.format('%016.0f', total) .. ':' .. cost)
  redis.call('PEXPIRE', log, period)
  return { 1, limit - used - cost, -1, span }
end

-- Room for `cost` comes when the oldest in-window entry is one whose `before` is at
-- least total - limit + cost, that is when the entry ahead of it leaves: a binary search
-- over ranks, as `before` grows with the rank.
local threshold = total - limit + cost
local low, high = stale + 1, redis.call('ZCARD', log)
while low < high do
  local middle = math.floor((low + high) / 2)
  local before = entry(redis.call('ZRANGE', log, middle, middle)[1])
  if not before then
    return bad_log(redis.call('ZRANGE', log, middle, middle)[1])
  end
  if before >= threshold then
    high = middle
  else
    low = middle + 1
  end
end
-- Rank `low - 1` leaves last before there is room; past the newest, the whole window.
local leaving = redis.call('ZRANGE', log, low - 1, low - 1, 'WITHSCORES')
local remaining = math.max(limit - used, 0)
return { 0, remaining, tonumber(leaving[2]) + span - now, tonumber(newest[2]) + span - now }
