--- Returns a leased resource to the pool if, and only if, it is still held with `token`.
---
--- Beyond the book. After the lease ran out and the resource was reclaimed (and perhaps
--- acquired again under another token), the old token releases nothing. The lease
--- deadline is not checked: a holder whose lease has passed but was not reclaimed yet
--- still holds the resource.
--- @key available set {<name>}:available  the set of resources free to acquire
--- @key occupied set {<name>}:occupied    the set of resources held
--- @key leases zset {<name>}:leases       leased resource -> lease deadline (ms, server clock)
--- @key holders hash {<name>}:holders     leased resource -> its holder's token
--- @arg resource string non-empty the resource's name
--- @arg token string non-empty    the token it was acquired with
--- @return bool                   1 when it was held with `token` and is now available; 0 otherwise
--- @error BAD_ARGS                not 4 keys and 2 arguments
--- @error BAD_RESOURCE            empty
--- @error BAD_TOKEN               empty
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
if #KEYS ~= 4 or #ARGV ~= 2 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 2 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local available = KEYS[1]
local occupied = KEYS[2]
local leases = KEYS[3]
local holders = KEYS[4]
local resource = ARGV[1]
if resource == '' then
  return redis.error_reply('BAD_RESOURCE must not be empty')
end
local token = ARGV[2]
if token == '' then
  return redis.error_reply('BAD_TOKEN must not be empty')
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

if redis.call('HGET', holders, resource) ~= token then
  return 0
end
redis.call('HDEL', holders, resource)
redis.call('ZREM', leases, resource)
redis.call('SMOVE', occupied, available, resource)
return 1
