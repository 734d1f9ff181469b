--- Deletes up to `limit` links that have expired, with their counts; how many it deleted.
---
--- Beyond the book. `visit.lua` deletes an expired link it comes across; a link nobody
--- visits after it expired stays until this runs. Call it now and then (each call does
--- bounded work), or until it answers less than `limit`.
--- @key links hash {<name>}:mapping_hash   short id -> URL (the book's `mapping_hash`)
--- @key cache hash {<name>}:mapping_cache  URL -> short id (the book's `mapping_cache`)
--- @key expiries zset {<name>}:expiries    short id -> when the link expires (ms, server clock)
--- @key limits hash {<name>}:limits        short id -> the most visits the link allows
--- @key visits hash {<name>}:visits        short id -> visits so far
--- @arg limit uint 1..=100        the most links deleted
--- @return uint                    how many links were deleted
--- @error BAD_ARGS                 not 5 keys and 1 argument
--- @error BAD_LIMIT                not an integer within its range
--- @error BAD_KEYS                 a key not named as its template says
--- @uses forget
--- @clock server
--- @complexity O(M × log N), N = the links with an expiry, M = `limit`
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; short_url/_shared.lua of the scripts folder).
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
-- Deletes `link` and everything kept about it.
local function forget(links_hash, expiries_set, limits_hash, visits_hash, link)
  redis.call('HDEL', links_hash, link)
  redis.call('ZREM', expiries_set, link)
  redis.call('HDEL', limits_hash, link)
  redis.call('HDEL', visits_hash, link)
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 5 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 5 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local links = KEYS[1]
local cache = KEYS[2]
local expiries = KEYS[3]
local limits = KEYS[4]
local visits = KEYS[5]
local limit = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if not limit or limit > 100 then
  return redis.error_reply('BAD_LIMIT must be an integer from 1 to 100, got ' .. shown(ARGV[1]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(links, '^(.+):mapping_hash$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:mapping_hash, got ' .. shown(links))
end
if cache ~= tag_of_keys .. ':mapping_cache' or expiries ~= tag_of_keys .. ':expiries' or
    limits ~= tag_of_keys .. ':limits' or visits ~= tag_of_keys .. ':visits' then
  for i, each in ipairs({ ':mapping_cache', ':expiries', ':limits', ':visits' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in links, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', expiries)
redis.call('HLEN', links)
redis.call('HLEN', cache)
redis.call('HLEN', limits)
redis.call('HLEN', visits)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local expired = redis.call('ZRANGE', expiries, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
for _, id in ipairs(expired) do
  local url = redis.call('HGET', links, id)
  -- A cached URL whose link is gone gets a new id from shorten_cached.lua.
  if url and redis.call('HGET', cache, url) == id then
    redis.call('HDEL', cache, url)
  end
  forget(links, expiries, limits, visits, id)
end
return #expired
