--- Removes `resource` from the pool, available or held, with its lease if it has one.
---
--- 《Redis 应用实例》 chapter 10 (`ResourcePool.disassociate`). The book removes it from
--- both sets; this also drops its lease and its holder's token, so that an expired lease
--- cannot bring it back into the pool later.
--- @key available set {<name>}:available  the set of resources free to acquire
--- @key occupied set {<name>}:occupied    the set of resources held
--- @key leases zset {<name>}:leases       leased resource -> lease deadline (ms, server clock)
--- @key holders hash {<name>}:holders     leased resource -> its holder's token
--- @arg resource string non-empty the resource's name
--- @return bool                   1 when the pool had it; 0 when it did not
--- @error BAD_ARGS                not 4 keys and 1 argument
--- @error BAD_RESOURCE            empty
--- @error BAD_KEYS                a key not named as its template says
--- @complexity O(log N), N = the leases
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
if #KEYS ~= 4 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local available = KEYS[1]
local occupied = KEYS[2]
local leases = KEYS[3]
local holders = KEYS[4]
local resource = ARGV[1]
if resource == '' then
  return redis.error_reply('BAD_RESOURCE must not be empty')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(available, '^(.+):available$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:available, got ' .. shown(available))
end
if occupied ~= tag_of_keys .. ':occupied' or leases ~= tag_of_keys .. ':leases' or
    holders ~= tag_of_keys .. ':holders' then
  for i, each in ipairs({ ':occupied', ':leases', ':holders' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in available, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('SCARD', available)
redis.call('SCARD', occupied)
redis.call('ZCARD', leases)
redis.call('HLEN', holders)

local removed = redis.call('SREM', available, resource) + redis.call('SREM', occupied, resource)
redis.call('ZREM', leases, resource)
redis.call('HDEL', holders, resource)
return removed > 0 and 1 or 0
