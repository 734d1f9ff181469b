--- Returns a resource held with no lease to the pool.
---
--- 《Redis 应用实例》 chapter 10 (`ResourcePool.release`, one SMOVE in the book). A
--- resource held under a lease is left alone: only its holder's token releases it
--- (`release_lease.lua`), so a client whose lease ran out cannot free a resource that
--- now belongs to someone else.
--- @key available set {<name>}:available  the set of resources free to acquire
--- @key occupied set {<name>}:occupied    the set of resources held
--- @key holders hash {<name>}:holders     leased resource -> its holder's token
--- @arg resource string non-empty the resource's name
--- @return bool                   1 when it was held with no lease and is now available; 0 otherwise
--- @error BAD_ARGS                not 3 keys and 1 argument
--- @error BAD_RESOURCE            empty
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
if #KEYS ~= 3 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local available = KEYS[1]
local occupied = KEYS[2]
local holders = KEYS[3]
local resource = ARGV[1]
if resource == '' then
  return redis.error_reply('BAD_RESOURCE must not be empty')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(available, '^(.+):available$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:available, got ' .. shown(available))
end
if occupied ~= tag_of_keys .. ':occupied' then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<name>}:occupied with <name> as in available, got ' .. shown(occupied))
end
if holders ~= tag_of_keys .. ':holders' then
  return redis.error_reply(
      'BAD_KEYS KEYS[3] must be {<name>}:holders with <name> as in available, got ' .. shown(holders))
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written (SMOVE would answer 0
-- for a missing `occupied` without looking at `available`).
redis.call('SCARD', available)
redis.call('SCARD', occupied)

if redis.call('HEXISTS', holders, resource) == 1 then
  return 0
end
return redis.call('SMOVE', occupied, available, resource)
