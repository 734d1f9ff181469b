--- Sets a leased resource's deadline to `ttl` from now if it is still held with `token`.
---
--- Beyond the book: a holder whose work runs long renews its lease before it runs out.
--- After the lease was reclaimed, the old token extends nothing.
--- @key leases zset {<name>}:leases    leased resource -> lease deadline (ms, server clock)
--- @key holders hash {<name>}:holders  leased resource -> its holder's token
--- @arg resource string non-empty the resource's name
--- @arg token string non-empty    the token it was acquired with
--- @arg ttl ms 1..=10^15-1        the new lease
--- @return bool                   1 when the lease was set; 0 when it is not held with `token`
--- @error BAD_ARGS                not 2 keys and 3 arguments
--- @error BAD_RESOURCE            empty
--- @error BAD_TOKEN               empty
--- @error BAD_TTL                 not whole milliseconds within its range
--- @error BAD_KEYS                a key not named as its template says
--- @clock server
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
if #KEYS ~= 2 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 2 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local leases = KEYS[1]
local holders = KEYS[2]
local resource = ARGV[1]
if resource == '' then
  return redis.error_reply('BAD_RESOURCE must not be empty')
end
local token = ARGV[2]
if token == '' then
  return redis.error_reply('BAD_TOKEN must not be empty')
end
local ttl = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not ttl or ttl > 999999999999999 then
  return redis.error_reply('BAD_TTL must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[3]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(leases, '^(.+):leases$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:leases, got ' .. shown(leases))
end
if holders ~= tag_of_keys .. ':holders' then
  return redis.error_reply('BAD_KEYS KEYS[2] must be {<name>}:holders with <name> as in leases, got ' .. shown(holders))
end
-- End of the generated input checks.
-- O(1) read that fails with WRONGTYPE before anything is written.
redis.call('ZCARD', leases)

if redis.call('HGET', holders, resource) ~= token then
  return 0
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZADD', leases, now + ttl, resource)
return 1
