--- Adds `resource` to the pool, as available, unless the pool already has it.
---
--- 《Redis 应用实例》 chapter 10 (`ResourcePool.associate`). The book checks both sets
--- under WATCH and returns None when another client touched them in between, so the
--- caller must retry; this checks and adds in one atomic step and never fails that way.
--- @key available set {<name>}:available  the set of resources free to acquire
--- @key occupied set {<name>}:occupied    the set of resources held; same hash slot as `available`
--- @arg resource string non-empty the resource's name
--- @return bool                   1 when added; 0 when the pool already has it, available or held
--- @error BAD_ARGS                not 2 keys and 1 argument
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
if #KEYS ~= 2 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local available = KEYS[1]
local occupied = KEYS[2]
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
-- End of the generated input checks.
-- Both reads raise WRONGTYPE before the write.
local held = redis.call('SISMEMBER', occupied, resource) == 1
if redis.call('SISMEMBER', available, resource) == 1 or held then
  return 0
end
return redis.call('SADD', available, resource)
