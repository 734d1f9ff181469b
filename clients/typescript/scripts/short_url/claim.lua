--- Gives `url` the custom short id `slug`, unless a live link holds it.
---
--- Beyond the book: a vanity link (`/spring-sale`). A slug is 1 to 64 characters of
--- `0-9a-zA-Z`, `-` and `_`. A slug held by a link that has expired or was visited as
--- often as it allows is free again: that link is deleted. A number's base62 id taken as
--- a slug is skipped by `shorten.lua` later, so the two never collide.
--- @key links hash {<name>}:mapping_hash  short id -> URL (the book's `mapping_hash`)
--- @key expiries zset {<name>}:expiries   short id -> when the link expires (ms, server clock)
--- @key limits hash {<name>}:limits       short id -> the most visits the link allows
--- @key visits hash {<name>}:visits       short id -> visits so far
--- @arg slug string non-empty    the short id wanted
--- @arg url string non-empty     the long URL
--- @arg ttl ms? 1..=10^15-1        how long the link lives; empty for ever
--- @arg max_visits uint? 1..=10^15-1    the most visits it allows; empty for no limit
--- @return bool                    1 if `slug` now leads to `url`; 0 if a live link holds it
--- @error BAD_ARGS                 not 4 keys and 4 arguments
--- @error BAD_SLUG                 empty, or not 1 to 64 characters of 0-9, a-z, A-Z, `-` and `_`
--- @error BAD_URL                  empty
--- @error BAD_TTL                  not whole milliseconds within its range (or empty)
--- @error BAD_MAX_VISITS           not an integer within its range (or empty)
--- @error BAD_KEYS                 a key not named as its template says
--- @error BAD_LIMITS               `limits` holds something other than an integer from 1 to 10^15 - 1 for the link
--- @error BAD_VISITS               `visits` holds something other than an integer from 0 to 2^63 - 1 for the link
--- @uses over forget keep shown
--- @clock server
--- @complexity O(log N), N = the links with an expiry
-- Helpers shared with other scripts, pasted by `redis-patterns fix` (edit them in
-- redis-patterns-codegen; short_url/_shared.lua of the scripts folder).
-- Whether decimal integer a is less than b, both in the one canonical form below: by sign,
-- then length, then in two parts of at most 10 digits, each exact in Lua's numbers, so that
-- 64-bit values compare exactly (and no locale's collation is involved).
local function decimal_less(a, b)
  local a_negative, b_negative = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if a_negative ~= b_negative then
    return a_negative
  end
  if a_negative then
    a, b = string.sub(b, 2), string.sub(a, 2)
  end
  if #a ~= #b then
    return #a < #b
  end
  local a_high, b_high = tonumber(string.sub(a, 1, 10)), tonumber(string.sub(b, 1, 10))
  if a_high ~= b_high then
    return a_high < b_high
  end
  return (tonumber(string.sub(a, 11)) or 0) < (tonumber(string.sub(b, 11)) or 0)
end
-- The one rule for integers: decimal digits, an optional leading '-', no leading zero, and
-- no '+', space, fraction, exponent or hex; within min and max. Returns the text itself.
local function integer(s, min, max)
  if s ~= '0' and not string.match(s, '^%-?[1-9]%d*$') then
    return nil
  end
  -- Up to 15 characters a value is exact in a Lua number, and a bound rounded to one
  -- still falls on the same side of it.
  if #s <= 15 then
    local n = tonumber(s)
    return n >= tonumber(min) and n <= tonumber(max) and s or nil
  end
  if decimal_less(s, min) or decimal_less(max, s) then
    return nil
  end
  return s
end
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
-- Whether `link` has expired by `now`, or was visited as often as it allows; nil and an
-- error reply when `limits` or `visits` holds no count for it (another client wrote it).
local function over(expiries_set, limits_hash, visits_hash, link, now)
  local deadline = redis.call('ZSCORE', expiries_set, link)
  if deadline and tonumber(deadline) <= now then
    return true
  end
  local most, seen = redis.call('HGET', limits_hash, link), redis.call('HGET', visits_hash, link)
  if most and not safe_integer(most, 1, 999999999999999) then
    return nil, redis.error_reply('BAD_LIMITS the visit limit of the link is ' .. shown(most)
      .. ', not an integer from 1 to 10^15 - 1')
  end
  if seen and not integer(seen, '0', '9223372036854775807') then
    return nil, redis.error_reply('BAD_VISITS the visit count of the link is ' .. shown(seen)
      .. ', not an integer from 0 to 2^63 - 1')
  end
  return most ~= false and tonumber(seen or '0') >= tonumber(most)
end
-- Deletes `link` and everything kept about it.
local function forget(links_hash, expiries_set, limits_hash, visits_hash, link)
  redis.call('HDEL', links_hash, link)
  redis.call('ZREM', expiries_set, link)
  redis.call('HDEL', limits_hash, link)
  redis.call('HDEL', visits_hash, link)
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
-- End of the shared helpers.
-- Input checks, generated from the header by redis-patterns-codegen (edit the header, then run
-- `redis-patterns fix <folder>`). A bad call changes nothing.
if #KEYS ~= 4 or #ARGV ~= 4 then
  return redis.error_reply('BAD_ARGS expected 4 keys and 4 arguments, got ' .. #KEYS .. ' and ' .. #ARGV)
end
local links = KEYS[1]
local expiries = KEYS[2]
local limits = KEYS[3]
local visits = KEYS[4]
local slug = ARGV[1]
if slug == '' then
  return redis.error_reply('BAD_SLUG must not be empty')
end
local url = ARGV[2]
if url == '' then
  return redis.error_reply('BAD_URL must not be empty')
end
local ttl = tonumber(string.match(ARGV[3], '^[1-9]%d*$'))
if ARGV[3] ~= '' and (not ttl or ttl > 999999999999999) then
  return redis.error_reply(
      'BAD_TTL must be whole milliseconds from 1 to 999999999999999, or empty, got ' .. shown(ARGV[3]))
end
local max_visits = tonumber(string.match(ARGV[4], '^[1-9]%d*$'))
if ARGV[4] ~= '' and (not max_visits or max_visits > 999999999999999) then
  return redis.error_reply(
      'BAD_MAX_VISITS must be an integer from 1 to 999999999999999, or empty, got ' .. shown(ARGV[4]))
end
-- The keys, as their templates name them: a value two of them share is the same in both.
local tag_of_keys = string.match(links, '^(.+):mapping_hash$')
if not tag_of_keys or not string.find(tag_of_keys, '^[^{]*{[^}]+}') then
  return redis.error_reply('BAD_KEYS KEYS[1] must be {<name>}:mapping_hash, got ' .. shown(links))
end
if expiries ~= tag_of_keys .. ':expiries' or limits ~= tag_of_keys .. ':limits' or
    visits ~= tag_of_keys .. ':visits' then
  for i, each in ipairs({ ':expiries', ':limits', ':visits' }) do
    if KEYS[i + 1] ~= tag_of_keys .. each then
      return redis.error_reply(
          'BAD_KEYS KEYS[' .. i + 1 .. '] must be {<name>}' .. each .. ' with <name> as in links, got ' ..
          shown(KEYS[i + 1]))
    end
  end
end
-- End of the generated input checks.
if #slug > 64 or not string.match(slug, '^[0-9a-zA-Z_%-]+$') then
  return redis.error_reply('BAD_SLUG slug must be 1 to 64 characters of 0-9, a-z, A-Z, - and _, got ' .. shown(slug))
end
-- O(1) reads that fail with WRONGTYPE before anything is written.
redis.call('ZCARD', expiries)
redis.call('HLEN', links)
redis.call('HLEN', limits)
redis.call('HLEN', visits)
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

if redis.call('HEXISTS', links, slug) == 1 then
  local gone, bad = over(expiries, limits, visits, slug, now)
  if bad then
    return bad
  end
  if not gone then
    return 0
  end
  forget(links, expiries, limits, visits, slug)
end
redis.call('HSET', links, slug, url)
keep(expiries, limits, slug, now, ttl, max_visits)
return 1
