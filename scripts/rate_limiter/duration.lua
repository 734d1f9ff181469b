#!lua flags=no-writes
--- Returns how long until the window resets, only when its limit is reached.
---
--- 《Redis 应用实例》 chapter 8 (`RateLimiter.duration`): the book's MULTI/GET/TTL/EXEC, in
--- milliseconds instead of whole seconds. Nil when the counter is missing or below
--- `maximum` (an attempt would be admitted now), or when it has no expiry.
--- Writes nothing and runs with EVALSHA_RO, also on replicas.
--- @key counter          the window's counter (`RateLimiter:<uid>:<action>`)
--- @arg maximum uint     attempts admitted per window, from 1 to 10^15 - 1
--- @return int?          milliseconds until the window resets; nil when attempts are admitted
--- @error BAD_MAXIMUM    `maximum` is not a whole number from 1 to 10^15 - 1
--- @error BAD_COUNTER    the counter holds something other than a count
--- @complexity O(1)
local counter = KEYS[1]
local maximum = ARGV[1]

if not string.match(maximum, '^%d+$') or not string.match(maximum, '[1-9]') or #maximum > 15 then
  return redis.error_reply('BAD_MAXIMUM maximum must be a whole number from 1 to 10^15 - 1, got "' .. maximum .. '"')
end

local stored = redis.call('GET', counter)
if not stored then
  return false
end
if not string.match(stored, '^%d+$') or #stored > 15 then
  return redis.error_reply('BAD_COUNTER the counter holds "' .. stored .. '", not an attempt count')
end
if tonumber(stored) < tonumber(maximum) then
  return false
end
local pttl = redis.call('PTTL', counter)
if pttl < 0 then
  return false
end
return pttl
