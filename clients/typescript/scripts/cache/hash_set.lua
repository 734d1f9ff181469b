--- Replaces the hash cache entry at `cache` with the given fields, and its time to live.
---
--- 《Redis 应用实例》 chapter 1 (`HashCache.set`), done as one atomic step. The book's
--- HSET merges into the old hash, so fields left from an earlier set stay in the entry,
--- and a set without a ttl keeps the old time to live. Here the entry is replaced whole:
--- the old hash is removed (UNLINK, so a big one is freed in the background), the new
--- fields are written, and the time to live is set, all at once, so no reader ever sees
--- the entry half-written or without its time to live. A key of another type is refused
--- with WRONGTYPE (from HLEN, before anything is written), so a mistyped name never
--- deletes another value.
--- @key cache hash <name>         the hash that holds the entry
--- @arg ttl ms? 1..=10^15-1       time to live; an empty string for no expiry
--- @arg fields bytes...  2..=2000 field, value, field, value, ...: from 1 to 1000 pairs
--- @return nil                    nothing
--- @error BAD_ARGS                not 1 key and from 3 to 2001 arguments
--- @error BAD_TTL                 not whole milliseconds within its range (or empty)
--- @error BAD_KEYS                a key not named as its template says
--- @error BAD_FIELDS              a field without a value: the fields and values are an odd number
--- @complexity O(N), N = number of fields given (the old entry is freed in the background)
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
if #KEYS ~= 1 or #ARGV < 3 or #ARGV > 2001 then
  return redis.error_reply('BAD_ARGS expected 1 key and from 3 to 2001 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local cache = KEYS[1]
local ttl = tonumber(string.match(ARGV[1], '^[1-9]%d*$'))
if ARGV[1] ~= '' and (not ttl or ttl > 999999999999999) then
  return redis.error_reply(
      'BAD_TTL must be whole milliseconds from 1 to 999999999999999, or empty, got ' .. shown(ARGV[1]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
if cache == '' then
  return redis.error_reply('BAD_KEYS KEYS[1] must be <name>, got ' .. shown(cache))
end
-- End of the generated input checks.
if #ARGV % 2 ~= 1 then
  return redis.error_reply('BAD_FIELDS fields must be field, value pairs; got ' .. (#ARGV - 1) .. ' arguments')
end

-- Raises WRONGTYPE for a key that is not a hash, before the first write.
redis.call('HLEN', cache)

redis.call('UNLINK', cache)
-- In batches: unpack() of a long list would overflow Lua's stack.
for i = 2, #ARGV, 500 do
  redis.call('HSET', cache, unpack(ARGV, i, math.min(i + 499, #ARGV)))
end
if ttl then
  redis.call('PEXPIRE', cache, ttl)
end
return nil
