--- Raises this server's fencing counter to `floor` while `lock` is held with `token`.
---
--- Answers the counter afterwards, or nil when the lock is not held with `token`. Beyond
--- the books: the second step of a Redlock acquisition (see `acquire.lua`). The lock's
--- fencing token is the highest number the granting servers answered; raising each of them
--- to it means that the next acquisition, whose majority shares at least one server with
--- this one, answers a higher token. That holds while no server loses its
--- counter (a restart without `appendfsync always`), which is why the token is best-effort.
--- @key lock string <name>           the lock key; holds the holder's token
--- @key fence string {<name>}:fence  this server's fencing counter
--- @arg token string hex:32          the token the lock was acquired with
--- @arg floor uint 1..=2^53-2        the lock's fencing token
--- @return int?                      the counter, at least `floor`; nil when the lock is not held with `token`
--- @error BAD_ARGS not 2 keys and 2 arguments
--- @error BAD_TOKEN not 32 hex digits
--- @error BAD_FLOOR not an integer within its range
--- @error BAD_KEYS  a key not named as its template says
--- @error BAD_FENCE                  `fence` holds something other than a whole number from 0 to 2^53 - 2
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
local floor = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if not floor or floor > 9007199254740990 then
  return redis.error_reply('BAD_FLOOR must be an integer from 1 to 9007199254740990, got ' .. shown(ARGV[2]))
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
-- The counter is read and checked first, so that a damaged one is refused whoever holds
-- the lock.
local last = redis.call('GET', fence)
if last and not safe_integer(last, 0, 9007199254740990) then
  return redis.error_reply('BAD_FENCE the fence counter holds ' .. shown(last) .. ', not a token count')
end
if redis.call('GET', lock) ~= token then
  return false
end
if tonumber(last or 0) >= floor then
  return tonumber(last)
end
redis.call('SET', fence, floor)
return floor
