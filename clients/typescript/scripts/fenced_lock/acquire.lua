--- Takes the lock for `ttl` and returns a fencing token, or nil when the lock is held.
---
--- Beyond the book. Each acquisition takes the next number from the `fence` counter and
--- stores it as the lock's value, so tokens increase strictly from one holder to the next.
--- A resource that remembers the highest token it has seen can refuse writes from a
--- holder whose lease ran out while it was paused (Kleppmann's fencing). Release and
--- extend with `identity_lock/release.lua` and `identity_lock/extend.lua`, passing the
--- token as the lock's token.
--- @key lock string <name>           the lock key; holds the current fencing token while held
--- @key fence string {<name>}:fence  the counter the tokens come from; in the same hash slot as `lock`, never deleted
--- @arg ttl ms 1..=10^15-1   the lease
--- @return int?              the fencing token; nil when the lock is held
--- @error BAD_ARGS           not 2 keys and 1 argument
--- @error BAD_TTL            not whole milliseconds within its range
--- @error BAD_KEYS           a key not named as its template says
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
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local lock = KEYS[1]
local fence = KEYS[2]
local ttl = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not ttl or ttl > 999999999999999 then
  return redis.error_reply('BAD_TTL must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[1]))
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
-- GET rather than EXISTS: a lock key of another type is WRONGTYPE, not "held".
if redis.call('GET', lock) then
  return false
end

-- Checked before INCR so that a damaged counter fails without writing anything; 2^53
-- keeps every token exact in Lua's doubles.
local last = redis.call('GET', fence)
if last and not safe_integer(last, 0, 9007199254740990) then
  return redis.error_reply('BAD_FENCE the fence counter holds ' .. shown(last) .. ', not a token count')
end

local token = redis.call('INCR', fence)
redis.call('SET', lock, token, 'PX', ttl)
return token
