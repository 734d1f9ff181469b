--- Takes the lock for `ttl` and returns a fencing token, or nil when the lock is held.
---
--- Beyond the book. Each acquisition takes the next number from the `fence` counter and
--- stores it as the lock's value, so tokens increase strictly from one holder to the next.
--- A resource that remembers the highest token it has seen can refuse writes from a
--- holder whose lease ran out while it was paused (Kleppmann's fencing). Release and
--- extend with `identity_lock/release.lua` and `identity_lock/extend.lua`, passing the
--- token as the lock's token.
--- @key lock           the lock key; holds the current fencing token while held
--- @key fence          the counter the tokens come from; in the same hash slot as `lock`, never deleted
--- @arg ttl ms         the lease in milliseconds, from 1 to 10^15 - 1
--- @return int?        the fencing token; nil when the lock is held
--- @error BAD_TTL      `ttl` is not a whole number of milliseconds from 1 to 10^15 - 1
--- @error BAD_FENCE    `fence` does not hold a positive integer below 2^53
--- @complexity O(1)
local lock = KEYS[1]
local fence = KEYS[2]
local ttl = ARGV[1]

-- Digits only (tonumber() would take '1e3' and '0x10'), and few enough that Redis
-- accepts the expiry: validated here because nothing may be written before it fails.
if not string.match(ttl, '^%d+$') or not string.match(ttl, '[1-9]') or #ttl > 15 then
  return redis.error_reply('BAD_TTL ttl must be whole milliseconds from 1 to 10^15 - 1, got "' .. ttl .. '"')
end

if redis.call('EXISTS', lock) == 1 then
  return false
end

-- Checked before INCR so that a damaged counter fails without writing anything.
-- 2^53 keeps every token exact in Lua's doubles.
local last = redis.call('GET', fence)
if last and (not string.match(last, '^%d+$') or tonumber(last) >= 9007199254740992) then
  return redis.error_reply('BAD_FENCE the fence counter holds "' .. last .. '", not a token count')
end

local token = redis.call('INCR', fence)
redis.call('SET', lock, token, 'PX', ttl)
return token
