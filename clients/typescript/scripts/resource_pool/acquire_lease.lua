--- Takes an available resource for `ttl` under the caller's `token`; nil when none is left.
---
--- Beyond the book. Like `acquire.lua`, but the resource comes back to the pool by itself
--- once its lease deadline (server clock, now + `ttl`) has passed, so a holder that
--- crashes cannot keep it forever, and only `token` can release or extend it
--- (`release_lease.lua`, `extend_lease.lua`). Up to `limit` expired leases are reclaimed
--- before picking, so nil means every resource is held by a live holder.
--- @key available set {<name>}:available  the set of resources free to acquire
--- @key occupied set {<name>}:occupied    the set of resources held
--- @key leases zset {<name>}:leases       leased resource -> lease deadline (ms, server clock)
--- @key holders hash {<name>}:holders     leased resource -> its holder's token
--- @arg ttl ms 1..=10^15-1        the lease
--- @arg token string non-empty    the holder's secret, fresh for each acquisition
--- @arg limit uint 1..=1000       the most expired leases reclaimed first
--- @return string?                the resource; nil when every resource is held
--- @error BAD_ARGS                not 4 keys and 3 arguments
--- @error BAD_TTL                 not whole milliseconds within its range
--- @error BAD_TOKEN               empty
--- @error BAD_LIMIT               not an integer within its range
--- @error BAD_KEYS                a key not named as its template says
--- @clock server
--- @complexity O(M × log N), N = the leases, M = `limit`
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
if #KEYS ~= 4 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local available = KEYS[1]
local occupied = KEYS[2]
local leases = KEYS[3]
local holders = KEYS[4]
local ttl = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not ttl or ttl > 999999999999999 then
  return redis.error_reply('BAD_TTL must be whole milliseconds from 1 to 999999999999999, got ' .. shown(ARGV[1]))
end
local token = ARGV[2]
if token == '' then
  return redis.error_reply('BAD_TOKEN must not be empty')
end
local limit = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if not limit or limit > 1000 then
  return redis.error_reply('BAD_LIMIT must be an integer from 1 to 1000, got ' .. shown(ARGV[3]))
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

-- Expired leases go back to the pool first (see reclaim.lua).
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local expired = redis.call('ZRANGE', leases, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
for _, stale in ipairs(expired) do
  redis.call('ZREM', leases, stale)
  redis.call('HDEL', holders, stale)
  redis.call('SMOVE', occupied, available, stale)
end

local resource = redis.call('SPOP', available)
if not resource then
  return false
end
redis.call('SADD', occupied, resource)
redis.call('ZADD', leases, now + ttl, resource)
redis.call('HSET', holders, resource, token)
return resource
