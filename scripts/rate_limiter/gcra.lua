--- Admits `cost` requests under GCRA: a bucket of `burst` that refills at `count` per `period`.
---
--- Beyond the book: the generic cell rate algorithm, as redis-cell's CL.THROTTLE and
--- go-redis/redis_rate do it. Only the theoretical arrival time (TAT) is stored, in
--- microseconds of the server's clock: one string per key, whatever the rate. Each
--- request moves the TAT by `cost` emission intervals (`period` / `count`); it is admitted
--- when the new TAT is at most `burst` intervals ahead of now. So a fresh key admits
--- `burst` requests at once, then `count` per `period`: over any span t, at most
--- `burst + t × count / period` requests. All or nothing: `cost` units are admitted
--- together or not at all, and a refused request writes nothing. The key expires when the
--- bucket is full again, so an idle client costs nothing.
--- Reply: allowed (1/0), requests of cost 1 still admitted now, microseconds until `cost`
--- would be admitted (-1 when allowed), microseconds until the bucket is full again.
--- @key tat              the theoretical arrival time, in microseconds
--- @arg burst uint       the bucket's size: requests admitted at once, from 1 to 10^15 - 1
--- @arg count uint       requests the bucket regains per `period`, from 1 to 10^15 - 1
--- @arg period ms        milliseconds in which `count` requests are regained, from 1 to 10^10
--- @arg cost uint        requests this call stands for, from 1 to `burst`
--- @return (bool, int, int, int)  allowed, remaining, retry-after µs (-1 when allowed), reset-after µs
--- @error BAD_BURST      `burst` is not a whole number from 1 to 10^15 - 1
--- @error BAD_RATE       `count` is not a whole number from 1 to 10^15 - 1
--- @error BAD_PERIOD     `period` is not whole milliseconds from 1 to 10^10, or refilling takes over 10^10 ms
--- @error BAD_COST       `cost` is not a whole number from 1 to `burst`
--- @error BAD_TAT        the key holds something other than a time; nothing was written
--- @clock server
--- @complexity O(1)
local tat = KEYS[1]
local burst = ARGV[1]
local count = ARGV[2]
local period = ARGV[3]
local cost = ARGV[4]

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

local burst_n = whole(burst, 999999999999999)
if not burst_n then
  return redis.error_reply('BAD_BURST burst must be a whole number from 1 to 10^15 - 1, got "' .. burst .. '"')
end
local count_n = whole(count, 999999999999999)
if not count_n then
  return redis.error_reply('BAD_RATE count must be a whole number from 1 to 10^15 - 1, got "' .. count .. '"')
end
local period_ms = whole(period, 10000000000)
if not period_ms then
  return redis.error_reply('BAD_PERIOD period must be whole milliseconds from 1 to 10^10, got "' .. period .. '"')
end
-- The bucket's refill time bounds the key's expiry and keeps every time exact.
if burst_n * period_ms / count_n > 10000000000 then
  return redis.error_reply('BAD_PERIOD the bucket would take burst * period / count = ' ..
    string.format('%.0f', burst_n * period_ms / count_n) .. ' ms to refill; at most 10^10 ms')
end
local cost_n = whole(cost, burst_n)
if not cost_n then
  return redis.error_reply('BAD_COST cost must be a whole number from 1 to burst (' .. burst ..
    '), got "' .. cost .. '"')
end

local stored = redis.call('GET', tat)
if stored and (not string.match(stored, '^%d+%.?%d*$') or #stored > 24 or tonumber(stored) >= 9007199254740992) then
  return redis.error_reply('BAD_TAT the key holds "' .. stored .. '", not a time in microseconds')
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local emission = period_ms * 1000 / count_n
local capacity = burst_n * emission

-- Times relative to now stay small, so their arithmetic keeps its precision.
local ahead = 0
if stored and tonumber(stored) > now then
  ahead = tonumber(stored) - now
end
local new_ahead = ahead + cost_n * emission
-- Whole requests that still fit; the tolerance absorbs rounding of the emission interval.
local function fitting(t)
  local n = math.floor((capacity - t) / emission + 1e-6)
  if n < 0 then
    return 0
  end
  return n
end

if new_ahead > capacity * (1 + 1e-12) then
  return {0, fitting(ahead), math.ceil(new_ahead - capacity), math.ceil(ahead)}
end

redis.call('SET', tat, string.format('%.17g', now + new_ahead), 'PX', math.ceil(new_ahead / 1000))
return {1, fitting(new_ahead), -1, math.ceil(new_ahead)}
