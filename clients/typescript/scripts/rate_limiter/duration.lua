#!lua flags=no-writes
--- Returns how long until the window resets, only when its limit is reached.
---
--- 《Redis 应用实例》 chapter 8 (`RateLimiter.duration`): the book's MULTI/GET/TTL/EXEC, in
--- milliseconds instead of whole seconds. Nil when the counter is missing or below
--- `maximum` (an attempt would be admitted now), or when it has no expiry.
--- Writes nothing and runs with EVALSHA_RO, also on replicas.
--- @key counter string <prefix>:<uid>:<action>  the window's counter (`RateLimiter:<uid>:<action>`)
--- @arg maximum uint 1..=10^15-1    attempts admitted per window
--- @return int?                     milliseconds until the window resets; nil when attempts are admitted
--- @error BAD_ARGS                  not 1 key and 1 argument
--- @error BAD_MAXIMUM               not an integer within its range
--- @error BAD_KEYS                  a key not named as its template says
--- @error BAD_COUNTER               the counter holds something other than a count
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
if #KEYS ~= 1 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 1 key and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local counter = KEYS[1]
local maximum = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not maximum or maximum > 999999999999999 then
  return redis.error_reply('BAD_MAXIMUM must be an integer from 1 to 999999999999999, got ' .. shown(ARGV[1]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
if not string.find(counter, '^.+:.+:.+$') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <prefix>:<uid>:<action>, got ' .. shown(counter))
end
-- End of the generated input checks.
local stored = redis.call('GET', counter)
if not stored then
  return false
end
if not safe_integer(stored, 0, 999999999999999) then
  return redis.error_reply('BAD_COUNTER the counter holds ' .. shown(stored) .. ', not an attempt count')
end
if tonumber(stored) < maximum then
  return false
end
local pttl = redis.call('PTTL', counter)
if pttl < 0 then
  return false
end
return pttl
