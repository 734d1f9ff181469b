--- Gives `url` a new short id: base62 of the next number (the book's `UrlShorty.shorten`).
---
--- 《Redis 应用实例》 chapter 20. The book sends INCRBY and then HSET, two round trips; here
--- it is one step. As in the book, each call gives a new id, even for a URL shortened
--- before (`shorten_cached.lua` gives the same one). Beyond the book, the link may expire
--- after `ttl` or allow at most `max_visits` visits (`visit.lua` enforces both), and an id
--- that a custom slug already holds (`claim.lua`) is skipped.
--- @key counter string {<name>}:id_counter  the last number handed out (the book's `id_counter`); ids are 1 to 2^53 - 1
--- @key links hash {<name>}:mapping_hash    short id -> URL (the book's `mapping_hash`)
--- @key expiries zset {<name>}:expiries     short id -> when the link expires (ms, server clock)
--- @key limits hash {<name>}:limits         short id -> the most visits the link allows
--- @arg url string non-empty     the long URL
--- @arg ttl ms? 1..=10^15-1        how long the link lives; empty for ever
--- @arg max_visits uint? 1..=10^15-1    the most visits it allows; empty for no limit
--- @return string                  the short id
--- @error BAD_ARGS                 not 4 keys and 3 arguments
--- @error BAD_URL                  empty
--- @error BAD_TTL                  not whole milliseconds within its range (or empty)
--- @error BAD_MAX_VISITS           not an integer within its range (or empty)
--- @error BAD_KEYS                 a key not named as its template says
--- @error BAD_COUNTER              the counter holds no integer from 0 to 2^53 - 1, or every id up to 2^53 - 1 is taken
--- @error IDS_TAKEN                the next 1000 ids were all custom slugs: the counter moved past them; call again
--- @uses keep base62 safe_integer shown
--- @clock server
--- @complexity O(log N + S), N = the links with an expiry, S = custom slugs that hold the next ids (at most 1000)
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
-- A link's expiry (`now` + `life` ms) and visit limit (`most`), when it has them.
local function keep(expiries_set, limits_hash, link, now, life, most)
  if life then
    redis.call('ZADD', expiries_set, now + life, link)
  end
  if most then
    redis.call('HSET', limits_hash, link, most)
  end
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
if #KEYS ~= 4 or #ARGV ~= 3 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 3 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local counter = KEYS[1]
local links = KEYS[2]
local expiries = KEYS[3]
local limits = KEYS[4]
local url = ARGV[1]
if url == '' then
  return redis.error_reply('BAD_URL must not be empty')
end
local ttl = tonumber(string.match(ARGV[2], '^[1-9]%d*$'))
if ARGV[2] ~= '' and (not ttl or ttl > 999999999999999) then
  return redis.error_reply(
      'BAD_TTL must be whole milliseconds from 1 to 999999999999999, or empty, got ' .. shown(ARGV[2]))
end
local max_visits = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if ARGV[3] ~= '' and (not max_visits or max_visits > 999999999999999) then
  return redis.error_reply(
      'BAD_MAX_VISITS must be an integer from 1 to 999999999999999, or empty, got ' .. shown(ARGV[3]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(counter, '^(.+):id_counter$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:id_counter, got ' .. shown(counter))
end
if links ~= tag_of_keys .. ':mapping_hash' or expiries ~= tag_of_keys .. ':expiries' or
    limits ~= tag_of_keys .. ':limits' then
  for i, each in ipairs({ ':mapping_hash', ':expiries', ':limits' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in counter, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', expiries)
redis.call('HLEN', links)
redis.call('HLEN', limits)
local last = redis.call('GET', counter)
if last and not safe_integer(last, 0, 9007199254740991) then
  return redis.error_reply('BAD_COUNTER the counter holds ' .. shown(last) .. ', not a count from 0 to 2^53 - 1')
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

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
keep(expiries, limits, id, now, ttl, max_visits)
return id
