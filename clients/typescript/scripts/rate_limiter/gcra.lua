--- Admits `cost` requests under GCRA: a bucket of `burst` that refills at `count` per `period`.
---
--- Beyond the book: the generic cell rate algorithm, as redis-cell's CL.THROTTLE and
--- go-redis/redis_rate do it. Only the theoretical arrival time (TAT) is stored: one
--- string per key, whatever the rate, holding microseconds of the server's clock as a
--- decimal with a fraction (the emission interval `period` / `count` is rarely whole).
--- Each request moves the TAT by `cost` emission intervals; it is admitted when the new
--- TAT is at most `burst` intervals ahead of now. So a fresh key admits `burst` requests
--- at once, then `count` per `period`: over any span t, at most
--- `burst + t × count / period` requests. All or nothing: `cost` units are admitted
--- together or not at all, and a refused request writes nothing. The key expires when the
--- bucket is full again, so an idle client costs nothing.
--- Remaining counts the requests of cost 1 still admitted now; retry-after is the time until
--- `cost` would be admitted, and reset-after the time until the bucket is full again.
--- @key tat string <prefix>:<uid>:<action>  the theoretical arrival time: microseconds, with a fraction
--- @arg burst uint 1..=10^15-1    the bucket's size: requests admitted at once
--- @arg count uint 1..=10^15-1    requests the bucket regains per `period`
--- @arg period ms 1..=10^10       the time in which `count` requests are regained
--- @arg cost uint 1..=10^15-1     requests this call stands for, at most `burst`
--- @return (bool, int, int, int)  allowed, remaining, retry-after µs (-1 when allowed), reset-after µs
--- @error BAD_ARGS                not 1 key and 4 arguments
--- @error BAD_BURST               not an integer within its range
--- @error BAD_COUNT               not an integer within its range
--- @error BAD_PERIOD              not whole milliseconds within its range, or a refill over 10^10 ms
--- @error BAD_COST                not an integer within its range, or more than `burst`
--- @error BAD_KEYS                a key not named as its template says
--- @error BAD_TAT                 the key holds something other than a time; nothing was written
--- @uses shown
--- @default prefix GcraLimiter   the keys of GcraLimiter::new: GcraLimiter:<uid>:<action>
--- @default burst =count      GcraLimiter::new(action, limit, period): a bucket of `limit`
--- @clock server
--- @complexity O(1)
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
if #KEYS ~= 1 or #ARGV ~= 4 then
  return redis.error_reply('BAD_ARGS expected 1 key and 4 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local tat = KEYS[1]
local burst = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not burst or burst > 999999999999999 then
  return redis.error_reply('BAD_BURST must be an integer from 1 to 999999999999999, got ' .. shown(ARGV[1]))
end
local count = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not count or count > 999999999999999 then
  return redis.error_reply('BAD_COUNT must be an integer from 1 to 999999999999999, got ' .. shown(ARGV[2]))
end
local period = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not period or period > 10000000000 then
  return redis.error_reply('BAD_PERIOD must be whole milliseconds from 1 to 10000000000, got ' .. shown(ARGV[3]))
end
local cost = tonumber(string.match(ARGV[4], '^[1-9]%d*$'))
if not cost or cost > 999999999999999 then
  return redis.error_reply('BAD_COST must be an integer from 1 to 999999999999999, got ' .. shown(ARGV[4]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
if not string.find(tat, '^.+:.+:.+$') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <prefix>:<uid>:<action>, got ' .. shown(tat))
end
-- End of the generated input checks.
-- The bucket's refill time bounds the key's expiry and keeps every time exact.
if burst * period / count > 10000000000 then
  return redis.error_reply('BAD_PERIOD the bucket would take burst * period / count = '
    .. string.format('%.0f', burst * period / count) .. ' ms to refill; at most 10^10 ms')
end
if cost > burst then
  return redis.error_reply('BAD_COST cost must be an integer from 1 to burst (' .. burst .. '), got ' .. cost)
end

local stored = redis.call('GET', tat)
-- What this script writes: digits and a fraction, no leading zero (a cheaper test than
-- the one rule for floats, which also takes signs and exponents).
local stored_time = stored and string.match(stored, '^%d+%.?%d*$') and not string.match(stored, '^0%d')
  and tonumber(stored)
if stored and not (stored_time and stored_time < 9007199254740992) then
  return redis.error_reply('BAD_TAT the key holds ' .. shown(stored) .. ', not a time in microseconds')
end

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local emission = period * 1000 / count
local capacity = burst * emission

-- Times relative to now stay small, so their arithmetic keeps its precision.
local ahead = 0
if stored_time and stored_time > now then
  ahead = stored_time - now
end
local new_ahead = ahead + cost * emission
local admitted = new_ahead <= capacity * (1 + 1e-12)
-- Whole requests that still fit after this call; the tolerance absorbs rounding of the
-- emission interval.
local fitting = math.max(math.floor((capacity - (admitted and new_ahead or ahead)) / emission + 1e-6), 0)
if not admitted then
  return { 0, fitting, math.ceil(new_ahead - capacity), math.ceil(ahead) }
end

redis.call('SET', tat, string.format('%.17g', now + new_ahead), 'PX', math.ceil(new_ahead / 1000))
return { 1, fitting, -1, math.ceil(new_ahead) }
