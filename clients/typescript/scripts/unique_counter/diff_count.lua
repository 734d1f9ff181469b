#!lua flags=no-writes
--- Counts the members of `x` that are not in `y`, in Redis, without sending them back.
---
--- 《Redis 应用实例》 chapter 7 (`UniqueCounter.diff`). The book sends SDIFF, so every
--- member of the difference travels to the client only to be counted there. Here
--- |x \ y| = |x| - |x ∩ y|: SCARD and SINTERCARD (Redis 7.0) in one atomic step, which
--- writes nothing (it runs with EVALSHA_RO, also on replicas) and needs no scratch key.
--- Both keys must share one cluster hash slot. SINTERCARD walks the smaller set, which
--- may hold 10,000 members, so that one call stays short; count bigger ones with a
--- HyperLogLog (`HllUniqueCounter`).
--- @key x set <x>        the set whose members are counted
--- @key y set <y>        the set whose members are left out
--- @return uint          the number of members of `x` that are not in `y`
--- @error BAD_ARGS       not 2 keys and 0 arguments
--- @error BAD_KEYS       a key not named as its template says
--- @error TOO_BIG        both sets hold more than 10,000 members
--- @complexity O(min(|x|, |y|)), at most 10,000
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
if #KEYS ~= 2 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local x = KEYS[1]
local y = KEYS[2]
-- The keys, as their templates name them: a value two of them share is the same in both.
if x == '' then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <x>, got ' .. shown(x))
end
if y == '' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be <y>, got ' .. shown(y))
end
-- End of the generated input checks.
local MAX_MEMBERS = 10000

local x_size, y_size = redis.call('SCARD', x), redis.call('SCARD', y)
if math.min(x_size, y_size) > MAX_MEMBERS then
  return redis.error_reply('TOO_BIG both sets hold more than ' .. MAX_MEMBERS
    .. ' members; count them with a HyperLogLog instead')
end
return x_size - redis.call('SINTERCARD', 2, x, y)
