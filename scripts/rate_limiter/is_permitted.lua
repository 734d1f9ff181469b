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
--- Reply: allowed (1/0), remaining attempts in this window, microseconds until an
--- attempt can be admitted (-1 when allowed), microseconds until the window resets.
--- @key counter              the window's counter (`RateLimiter:<uid>:<action>`)
--- @arg maximum uint         attempts admitted per window, from 1 to 10^15 - 1
--- @arg interval ms          the window's length in milliseconds, from 1 to 10^10
--- @arg cost uint            attempts this call stands for, from 1 to `maximum`
--- @return (bool, int, int, int)  allowed, remaining, retry-after µs (-1 when allowed), reset-after µs
--- @error BAD_MAXIMUM        `maximum` is not a whole number from 1 to 10^15 - 1
--- @error BAD_INTERVAL       `interval` is not a whole number of milliseconds from 1 to 10^10
--- @error BAD_COST           `cost` is not a whole number from 1 to `maximum`
--- @error BAD_COUNTER        the counter holds something other than a count; nothing was written
--- @complexity O(1)
local counter = KEYS[1]
local maximum = ARGV[1]
local interval = ARGV[2]
local cost = ARGV[3]

-- A whole number from 1 to `max`, in digits only (tonumber() would take '1e3' and '0x10').
local function whole(s, max)
  if not string.match(s, '^%d+$') or not string.match(s, '[1-9]') or #s > 15 then
    return nil
  end
  local n = tonumber(s)
  if n > max then
    return nil
  end
  return n
end

local max_n = whole(maximum, 999999999999999)
if not max_n then
  return redis.error_reply('BAD_MAXIMUM maximum must be a whole number from 1 to 10^15 - 1, got "' .. maximum .. '"')
end
local interval_ms = whole(interval, 10000000000)
if not interval_ms then
  return redis.error_reply('BAD_INTERVAL interval must be whole milliseconds from 1 to 10^10, got "' .. interval .. '"')
end
local cost_n = whole(cost, max_n)
if not cost_n then
  return redis.error_reply('BAD_COST cost must be a whole number from 1 to maximum (' .. maximum ..
    '), got "' .. cost .. '"')
end

local stored = redis.call('GET', counter)
local count = 0
if stored then
  if not string.match(stored, '^%d+$') or #stored > 15 then
    return redis.error_reply('BAD_COUNTER the counter holds "' .. stored .. '", not an attempt count')
  end
  count = tonumber(stored)
end

local pttl = redis.call('PTTL', counter)
if count + cost_n > max_n then
  if pttl < 0 then
    -- A full counter with no expiry would refuse forever: give it its window back.
    redis.call('PEXPIRE', counter, interval_ms)
    pttl = interval_ms
  end
  local remaining = max_n - count
  if remaining < 0 then
    remaining = 0
  end
  return {0, remaining, pttl * 1000, pttl * 1000}
end

redis.call('INCRBY', counter, cost_n)
if pttl < 0 then
  -- The first attempt of the window (or a counter that lost its expiry) starts the window.
  redis.call('PEXPIRE', counter, interval_ms)
  pttl = interval_ms
end
return {1, max_n - count - cost_n, -1, pttl * 1000}
