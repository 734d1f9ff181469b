#!lua flags=no-writes
--- Counts the pool's resources, available and held, at one moment.
---
--- 《Redis 应用实例》 chapter 10 (`ResourcePool.total_count`, MULTI SCARD SCARD EXEC in
--- the book). Read-only: runs with EVALSHA_RO, also on replicas.
--- @key available set {<name>}:available  the set of resources free to acquire
--- @key occupied set {<name>}:occupied    the set of resources held
--- @return uint                   how many resources the pool has
--- @error BAD_ARGS                not 2 keys and 0 arguments
--- @error BAD_KEYS                a key not named as its template says
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
if #KEYS ~= 2 or #ARGV ~= 0 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 0 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local available = KEYS[1]
local occupied = KEYS[2]
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(available, '^(.+):available$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:available, got ' .. shown(available))
end
if occupied ~= tag_of_keys .. ':occupied' then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<name>}:occupied with <name> as in available, got ' .. shown(occupied))
end
-- End of the generated input checks.
return redis.call('SCARD', available) + redis.call('SCARD', occupied)
