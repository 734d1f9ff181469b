--- Admits `cost` requests if the last `period` holds room for them: an exact sliding window.
---
--- Beyond the book. The log is a sorted set of the admitted requests, scored by the
--- server's clock in microseconds; each call first drops the entries older than
--- `period`, then admits the request (all `cost` units, or none) when fewer than `limit`
--- remain. No span of `period` ever holds more than `limit` admitted requests, at any
--- alignment. Memory is O(`limit`) per key, one entry per admitted unit, so keep `limit`
--- small (login attempts, messages per minute); GCRA (`gcra.lua`) costs one string.
--- Members are `<microseconds>:<n>`, `n` counting the entries of that microsecond, so
--- requests that share a microsecond stay distinct. If the clock steps back, time is
--- taken as the newest entry's. The key expires when its newest entry leaves the window,
--- so an idle client costs nothing. Refused requests are not logged.
--- Reply: allowed (1/0), requests still admitted now, microseconds until `cost` would be
--- admitted (-1 when allowed), microseconds until the window is empty.
--- @key log             the sorted set of admitted requests
--- @arg limit uint      requests admitted in any span of `period`, from 1 to 10^6
--- @arg period ms       the window's length in milliseconds, from 1 to 10^10
--- @arg cost uint       requests this call stands for, from 1 to `limit`
--- @return (bool, int, int, int)  allowed, remaining, retry-after µs (-1 when allowed), reset-after µs
--- @error BAD_LIMIT     `limit` is not a whole number from 1 to 10^6
--- @error BAD_PERIOD    `period` is not a whole number of milliseconds from 1 to 10^10
--- @error BAD_COST      `cost` is not a whole number from 1 to `limit`
--- @clock server
--- @complexity O(log N + cost), N = entries in the window, at most `limit`
local log = KEYS[1]
local limit = ARGV[1]
local period = ARGV[2]
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

local limit_n = whole(limit, 1000000)
if not limit_n then
  return redis.error_reply('BAD_LIMIT limit must be a whole number from 1 to 10^6, got "' .. limit .. '"')
end
local period_ms = whole(period, 10000000000)
if not period_ms then
  return redis.error_reply('BAD_PERIOD period must be whole milliseconds from 1 to 10^10, got "' .. period .. '"')
end
local cost_n = whole(cost, limit_n)
if not cost_n then
  return redis.error_reply('BAD_COST cost must be a whole number from 1 to limit (' .. limit ..
    '), got "' .. cost .. '"')
end

local span = period_ms * 1000
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local newest = redis.call('ZRANGE', log, 0, 0, 'REV', 'WITHSCORES')
if newest[2] and tonumber(newest[2]) > now then
  now = tonumber(newest[2])
end

-- Scores go to Redis as whole digits: Lua would print 1.7e15 with 14 significant digits.
local stamp = string.format('%.0f', now)
-- The window is (now - span, now]: an entry scored now - span has just left it.
redis.call('ZREMRANGEBYSCORE', log, '-inf', string.format('%.0f', now - span))
local used = redis.call('ZCARD', log)

if used + cost_n > limit_n then
  -- Room for `cost` comes when the (used + cost - limit)-th oldest entry leaves.
  local freeing = redis.call('ZRANGE', log, used + cost_n - limit_n - 1, used + cost_n - limit_n - 1, 'WITHSCORES')
  local last = redis.call('ZRANGE', log, 0, 0, 'REV', 'WITHSCORES')
  local remaining = limit_n - used
  if remaining < 0 then
    remaining = 0
  end
  return {0, remaining, tonumber(freeing[2]) + span - now, tonumber(last[2]) + span - now}
end

local taken = redis.call('ZCOUNT', log, stamp, stamp)
for i = 1, cost_n do
  redis.call('ZADD', log, stamp, stamp .. ':' .. (taken + i))
end
redis.call('PEXPIRE', log, period_ms)
return {1, limit_n - used - cost_n, -1, span}
