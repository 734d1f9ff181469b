--- Counts `cost` attempts against a fixed window of `interval` and tells whether they are allowed.
---
--- 《Redis 应用实例》 chapter 8 (`RateLimiter.is_permitted`). The first admitted attempt
--- starts a window of `interval`; up to `maximum` attempts are admitted in it, then
--- everything is refused until the key expires. Unlike the book, a refused attempt is not
--- counted and writes nothing: the window never moves (the book's `EXPIRE NX`), so
--- counting refusals would change no answer, while it would cost a write per refusal
--- during a flood and let the count exceed `maximum`. All or nothing: `cost` attempts are
--- admitted together or not at all. A counter left without an expiry (by PERSIST, or a
--- SET from elsewhere) gets the interval again, so no client is locked out forever.
--- Remaining counts the attempts still admitted in this window; retry-after is the time
--- until an attempt can be admitted, and reset-after the time until the window resets.
--- @key counter string <prefix>:<uid>:<action>  the window's counter (`RateLimiter:<uid>:<action>`)
--- @arg maximum uint 1..=10^15-1    attempts admitted per window
--- @arg interval ms 1..=10^10       the window's length
--- @arg cost uint 1..=10^15-1       attempts this call stands for, at most `maximum`
--- @return (bool, int, int, int)    allowed, remaining, retry-after µs (-1 when allowed), reset-after µs
--- @error BAD_ARGS                  not 1 key and 3 arguments
--- @error BAD_MAXIMUM               not an integer within its range
--- @error BAD_INTERVAL              not whole milliseconds within its range
--- @error BAD_COST                  not an integer within its range, or more than `maximum`
--- @error BAD_KEYS                  a key not named as its template says
--- @error BAD_COUNTER               the counter holds something other than a count; nothing was written
--- @uses safe_integer shown
--- @default prefix RateLimiter   the keys of RateLimiter::new: RateLimiter:<uid>:<action>
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
if #KEYS ~= 1 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 1 key and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local counter = KEYS[1]
local maximum = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not maximum or maximum > 999999999999999 then
  return redis.error_reply('BAD_MAXIMUM must be an integer from 1 to 999999999999999, got ' .. shown(ARGV[1]))
end
local interval = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not interval or interval > 10000000000 then
  return redis.error_reply('BAD_INTERVAL must be whole milliseconds from 1 to 10000000000, got ' .. shown(ARGV[2]))
end
local cost = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not cost or cost > 999999999999999 then
  return redis.error_reply('BAD_COST must be an integer from 1 to 999999999999999, got ' .. shown(ARGV[3]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
if not string.find(counter, '^.+:.+:.+$') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <prefix>:<uid>:<action>, got ' .. shown(counter))
end
-- End of the generated input checks.
if cost > maximum then
  return redis.error_reply('BAD_COST cost must be an integer from 1 to maximum (' .. maximum .. '), got ' .. cost)
end

local stored = redis.call('GET', counter)
local count = 0
if stored then
  -- What INCRBY would refuse (`007`, `1.5`, ...) is no count either.
  if not safe_integer(stored, 0, 999999999999999) then
    return redis.error_reply('BAD_COUNTER the counter holds ' .. shown(stored) .. ', not an attempt count')
  end
  count = tonumber(stored)
end

local pttl = redis.call('PTTL', counter)
if count + cost > maximum then
  if pttl < 0 then
    -- A full counter with no expiry would refuse forever: give it its window back.
    redis.call('PEXPIRE', counter, interval)
    pttl = interval
  end
  return { 0, math.max(maximum - count, 0), pttl * 1000, pttl * 1000 }
end

redis.call('INCRBY', counter, cost)
if pttl < 0 then
  -- The first attempt of the window (or a counter that lost its expiry) starts the window.
  redis.call('PEXPIRE', counter, interval)
  pttl = interval
end
return { 1, maximum - count - cost, -1, pttl * 1000 }
