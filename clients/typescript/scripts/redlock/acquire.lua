--- Takes one server's share of a Redlock: its next fencing number, or nil when held.
---
--- Sets `lock` to `token` for `ttl` when it is free, and answers this server's next fencing
--- number; nil when another token holds the lock.
--- Beyond the books. Redlock (the Redis docs' "Distributed locks with Redis") takes one lock
--- on N independent masters, and holds it when a majority granted it within its lease. No
--- script can span servers: the Rust `Redlock` runs this on every server at once, then
--- `raise.lua` on those that granted (so that the highest number among them, the lock's
--- fencing token, is where each of them counts on from), releases with
--- `identity_lock/release.lua` and extends with `identity_lock/extend.lua`, all with the same
--- token. A call repeated with the token that holds the lock (its reply was lost) sets the
--- lease anew and answers the counter as it is.
--- @key lock string <name>           the lock key; holds the holder's token
--- @key fence string {<name>}:fence  this server's fencing counter, the last number it handed out; never deleted
--- @arg token string hex:32  128 random bits as 32 hex digits, drawn anew for every acquisition
--- @arg ttl ms 1..=10^15-1   the lease
--- @return int?              this server's fencing number; nil when another token holds the lock
--- @error BAD_ARGS not 2 keys and 2 arguments
--- @error BAD_TOKEN not 32 hex digits
--- @error BAD_TTL   not whole milliseconds within its range
--- @error BAD_KEYS  a key not named as its template says
--- @error BAD_FENCE          `fence` holds something other than a whole number from 0 to 2^53 - 2
--- @uses safe_integer shown
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
-- The hash tag group that a template's `{…}` makes of value `s`: `s` itself when it holds a
-- hash tag (a `{`, then the first `}` after it, with at least one byte between), else `s` in
-- braces; nil for an empty value, or one with a `}` but no hash tag.
local function key_group(s)
  if string.find(s, '^[^{]*{[^}]+}') then
    return s
  end
  if s ~= '' and not string.find(s, '}', 1, true) then
    return '{' .. s .. '}'
  end
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 2 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local lock = KEYS[1]
local fence = KEYS[2]
local token = ARGV[1]
if #token ~= 32 or string.find(token, '%X') then
  return redis.error_reply('BAD_TOKEN must be 32 hex digits, got ' .. shown(token))
end
local ttl = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not ttl or ttl > 999999999999999 then
  return redis.error_reply('BAD_TTL must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[2]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = key_group(lock)
if lock == '' or not tag_of_keys then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <name>, got ' .. shown(lock))
end
if fence ~= tag_of_keys .. ':fence' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:fence with <name> as in lock, got ' .. shown(fence))
end
-- End of the generated input checks.
-- Both keys are read and checked before any write, so that damaged data fails without
-- writing anything, whoever holds the lock. GET rather than EXISTS: a lock key of another
-- type is WRONGTYPE, not "held". Below 2^53 every number is exact in Lua's doubles.
local holder = redis.call('GET', lock)
local last = redis.call('GET', fence)
if last and not safe_integer(last, 0, 9007199254740990) then
  return redis.error_reply('BAD_FENCE the fence counter holds ' .. shown(last) .. ', not a token count')
end
if holder and holder ~= token then
  return false
end

if holder then
  redis.call('PEXPIRE', lock, ttl)
  return tonumber(last or 0)
end
redis.call('SET', lock, token, 'PX', ttl)
return redis.call('INCR', fence)
