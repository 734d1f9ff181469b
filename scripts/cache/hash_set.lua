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
--- @key cache             the hash that holds the entry
--- @arg ttl string        time to live in whole milliseconds, from 1 to 10^15 - 1; an empty string for no expiry
--- @arg fields string...  field, value, field, value, ...: at least one pair
--- @return nil            nothing
--- @error BAD_TTL         `ttl` is neither empty nor whole milliseconds from 1 to 10^15 - 1
--- @error BAD_FIELDS      no fields, or a field without a value
--- @complexity O(N + 1), N = number of fields given (the old entry is freed in the background)
local cache = KEYS[1]
local ttl = ARGV[1]

-- Digits only (tonumber() would take '1e3' and '0x10'), and few enough that Redis
-- accepts the expiry: checked here because nothing may be written before it fails.
if ttl ~= '' and (not string.match(ttl, '^%d+$') or not string.match(ttl, '[1-9]') or #ttl > 15) then
  return redis.error_reply('BAD_TTL ttl must be empty or whole milliseconds from 1 to 10^15 - 1, got "' .. ttl .. '"')
end

-- ARGV[2..] holds the pairs, so there must be an even number (and some) of them.
local given = #ARGV - 1
if given == 0 or given % 2 ~= 0 then
  return redis.error_reply('BAD_FIELDS fields must be field, value pairs, at least one; got ' .. given .. ' arguments')
end

-- Raises WRONGTYPE for a key that is not a hash, before the first write.
redis.call('HLEN', cache)

redis.call('UNLINK', cache)
for i = 2, #ARGV, 2 do
  redis.call('HSET', cache, ARGV[i], ARGV[i + 1])
end
if ttl ~= '' then
  redis.call('PEXPIRE', cache, ttl)
end
return nil
