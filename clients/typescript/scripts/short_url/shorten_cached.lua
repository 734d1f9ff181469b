--- Gives `url` its short id: the one it already has, or a new one (the book's `UrlShortyWithCache.shorten`).
---
--- 《Redis 应用实例》 chapter 20. The book checks the cache, then creates an id, in four
--- round trips: two clients shortening the same URL at once both miss and get two ids.
--- Here the check and the creation are one step, so a URL gets exactly one id, however
--- many clients shorten it at once. An id whose link is gone (removed by hand) is
--- replaced. Ids skip custom slugs, as in `shorten.lua`.
--- @key counter string {<name>}:id_counter  the last number handed out (the book's `id_counter`); ids are 1 to 2^53 - 1
--- @key links hash {<name>}:mapping_hash    short id -> URL (the book's `mapping_hash`)
--- @key cache hash {<name>}:mapping_cache   URL -> short id (the book's `mapping_cache`)
--- @arg url string non-empty     the long URL
--- @return string                  the short id
--- @error BAD_ARGS                 not 3 keys and 1 argument
--- @error BAD_URL                  empty
--- @error BAD_KEYS                 a key not named as its template says
--- @error BAD_COUNTER              the counter holds no integer from 0 to 2^53 - 1, or every id up to 2^53 - 1 is taken
--- @error IDS_TAKEN                the next 1000 ids were all custom slugs: the counter moved past them; call again
--- @uses base62 safe_integer shown
--- @complexity O(1 + S), S = custom slugs that hold the next ids (at most 1000)
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; short_url/_shared.lua of the scripts folder).
-- The same rule where min and max are within 2^53 - 1 of 0, on a fast path: there every
-- integer is exact in Lua's numbers, and a longer one rounds to a number out of range.
-- Returns the number.
local function safe_integer(s, min, max)
  local n = (s == '0' or string.match(s, '^%-?[1-9]%d*$')) and tonumber(s)
  if n and n >= min and n <= max then
    return n
  end
end
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
-- The book's base62 of n: digits 0-9, then a-z, then A-Z (0 -> 0, 61 -> Z, 62 -> 10).
local function base62(n)
  local digits = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'
  local text = ''
  repeat
    local d = n % 62
    text = string.sub(digits, d + 1, d + 1) .. text
    n = (n - d) / 62
  until n == 0
  return text
end
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 3 or #ARGV ~= 1 then
  return redis.error_reply('BAD_ARGS expected 3 keys and 1 argument, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local counter = KEYS[1]
local links = KEYS[2]
local cache = KEYS[3]
local url = ARGV[1]
if url == '' then
  return redis.error_reply('BAD_URL must not be empty')
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(counter, '^(.+):id_counter$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:id_counter, got ' .. shown(counter))
end
if links ~= tag_of_keys .. ':mapping_hash' then
  return redis.error_reply(
      'BAD_KEYS KEYS[2] must be {<name>}:mapping_hash with <name> as in counter, got ' .. shown(links))
end
if cache ~= tag_of_keys .. ':mapping_cache' then
  return redis.error_reply(
      'BAD_KEYS KEYS[3] must be {<name>}:mapping_cache with <name> as in counter, got ' .. shown(cache))
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('HLEN', links)
redis.call('HLEN', cache)
local known = redis.call('HGET', cache, url)
if known and redis.call('HGET', links, known) == url then
  return known
end
local last = redis.call('GET', counter)
if last and not safe_integer(last, 0, 9007199254740991) then
  return redis.error_reply('BAD_COUNTER the counter holds ' .. shown(last) .. ', not a count from 0 to 2^53 - 1')
end

-- The next number whose id no custom slug holds (a slug made of base62 digits may).
-- At most 1000 are tried; past a run that long the counter moves on and the caller
-- calls again.
local n = tonumber(last or '0')
local id
for _ = 1, 1000 do
  n = n + 1
  if n > 9007199254740991 then
    return redis.error_reply('BAD_COUNTER every id up to 2^53 - 1 is taken')
  end
  id = base62(n)
  if redis.call('HEXISTS', links, id) == 0 then
    break
  end
  id = nil
end
redis.call('SET', counter, string.format('%d', n))
if not id then
  return redis.error_reply('IDS_TAKEN the next 1000 ids are custom slugs; the counter moved past them, call again')
end
redis.call('HSET', links, id, url)
redis.call('HSET', cache, url, id)
return id
